'use strict';
// A self-signed X.509 certificate for the plugin's side of the mutual TLS
// with the host (docs/protocol.md, "Mutual TLS"). Node can make keys and
// sign but has no API to build a certificate, and hand-written ASN.1 is not
// something to copy into a plugin: jsrsasign builds the certificate body,
// Node's native crypto makes the ECDSA P-256 key and signs. (jsrsasign
// could sign too, in plain JavaScript — hundreds of milliseconds; an RSA
// key, as node-forge would need, takes as long to generate.)
//
// The host trusts exactly this certificate: it reads it from the handshake
// line, puts it in its root pool and dials with server name "localhost", so
// the certificate names localhost in its subjectAltName and may sign (it is
// its own CA, as go-plugin's are). It is also the plugin's client
// certificate towards the host's API, hence clientAuth.

const crypto = require('node:crypto');
const { KJUR } = require('jsrsasign');

// asn1Time is a Date as X.509 UTCTime, YYMMDDhhmmssZ.
function asn1Time(d) {
  return d.toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z';
}

// selfSigned returns {certPem, keyPem, der} for a certificate valid from
// 30 s ago (clock skew) for `days` days.
function selfSigned({ commonName = 'localhost', days = 3650 } = {}) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const serial = crypto.randomBytes(16);
  serial[0] &= 0x7f; // positive
  const now = Date.now();
  const tbs = new KJUR.asn1.x509.TBSCertificate({
    version: 3,
    serial: { hex: serial.toString('hex') },
    sigalg: 'SHA256withECDSA',
    issuer: { str: '/CN=' + commonName },
    subject: { str: '/CN=' + commonName },
    notbefore: asn1Time(new Date(now - 30_000)),
    notafter: asn1Time(new Date(now + days * 86_400_000)),
    sbjpubkey: publicKey.export({ type: 'spki', format: 'pem' }),
    ext: [
      { extname: 'basicConstraints', cA: true, critical: true },
      { extname: 'keyUsage', critical: true, names: ['digitalSignature', 'keyCertSign'] },
      { extname: 'extKeyUsage', array: [{ name: 'serverAuth' }, { name: 'clientAuth' }] },
      { extname: 'subjectAltName', array: [{ dns: 'localhost' }, { ip: '127.0.0.1' }] },
    ],
  });
  // ECDSA signature in DER, as X.509 wants it (Node's default encoding).
  const sig = crypto.sign('sha256', Buffer.from(tbs.tohex(), 'hex'), privateKey);
  const cert = new KJUR.asn1.x509.Certificate({ tbsobj: tbs, sigalg: 'SHA256withECDSA', sighex: sig.toString('hex') });
  const der = Buffer.from(cert.tohex(), 'hex');
  const certPem = new crypto.X509Certificate(der).toString();
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' });
  return { der, certPem, keyPem };
}

module.exports = { selfSigned };
