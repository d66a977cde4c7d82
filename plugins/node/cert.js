'use strict';
// A self-signed X.509 certificate for go-plugin's AutoMTLS (docs/protocol.md,
// "Mutual TLS"), made with node-forge: Node can make keys and sign but has
// no API to create a certificate, and hand-written ASN.1 is not something
// to copy into a plugin.
//
// The host trusts exactly this certificate: it reads it from the handshake
// line, puts it in its root pool and dials with server name "localhost", so
// the certificate names localhost in its subjectAltName and may sign (it is
// its own CA, as go-plugin's are). It is also the plugin's client
// certificate towards the host's API, hence clientAuth.

const crypto = require('node:crypto');
const forge = require('node-forge');

// selfSigned returns {certPem, keyPem, der} for a certificate valid from
// 30 s ago (clock skew) for `days` days. The RSA key is made by Node's
// native crypto (fast), then handed to forge to sign the certificate.
function selfSigned({ commonName = 'localhost', days = 30 } = {}) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }));
  const serial = crypto.randomBytes(16);
  serial[0] &= 0x7f; // positive
  cert.serialNumber = serial.toString('hex');
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 30_000);
  cert.validity.notAfter = new Date(now + days * 86_400_000);
  const name = [{ name: 'commonName', value: commonName }];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, keyCertSign: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
    { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(keyPem), forge.md.sha256.create());
  const certPem = forge.pki.certificateToPem(cert);
  const der = Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes(), 'binary');
  return { der, certPem, keyPem };
}

module.exports = { selfSigned };
