'use strict';
// A self-signed X.509 certificate for go-plugin's AutoMTLS, built with
// Node's own crypto: an ECDSA P-256 key, and the certificate's DER written
// out by hand (Node can sign but has no API to create a certificate).
//
// The host (go-plugin's client) trusts exactly this certificate: it reads it
// from the handshake line, puts it in its root pool and dials with server
// name "localhost", so the certificate names localhost in its
// subjectAltName and may sign (it is its own CA, as go-plugin's are).

const crypto = require('node:crypto');

function length(n) {
  if (n < 0x80) return Buffer.from([n]);
  const bytes = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag, ...parts) {
  const content = Buffer.concat(parts);
  return Buffer.concat([Buffer.from([tag]), length(content.length), content]);
}

const seq = (...parts) => tlv(0x30, ...parts);
const set = (...parts) => tlv(0x31, ...parts);
const explicit = (n, ...parts) => tlv(0xa0 + n, ...parts);
const octets = (buf) => tlv(0x04, buf);
const bool = (v) => tlv(0x01, Buffer.from([v ? 0xff : 0x00]));
const utf8 = (s) => tlv(0x0c, Buffer.from(s, 'utf8'));

function integer(buf) {
  let b = buf;
  while (b.length > 1 && b[0] === 0 && (b[1] & 0x80) === 0) b = b.subarray(1);
  if (b[0] & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

function oid(dotted) {
  const arcs = dotted.split('.').map(Number);
  const out = [40 * arcs[0] + arcs[1]];
  for (const arc of arcs.slice(2)) {
    const chunk = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v & 0x7f));
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

// time encodes a date as UTCTime before 2050 and GeneralizedTime after,
// as RFC 5280 requires.
function time(d) {
  const p = (n, w = 2) => String(n).padStart(w, '0');
  const rest = p(d.getUTCMonth() + 1) + p(d.getUTCDate()) + p(d.getUTCHours()) + p(d.getUTCMinutes()) + p(d.getUTCSeconds()) + 'Z';
  const y = d.getUTCFullYear();
  if (y < 2050) return tlv(0x17, Buffer.from(p(y % 100) + rest, 'ascii'));
  return tlv(0x18, Buffer.from(p(y, 4) + rest, 'ascii'));
}

function extension(id, critical, value) {
  return critical ? seq(oid(id), bool(true), octets(value)) : seq(oid(id), octets(value));
}

const ECDSA_SHA256 = '1.2.840.10045.4.3.2';

// selfSigned returns {certPem, keyPem, der} for a certificate valid from
// 30 s ago (clock skew) for `days` days.
function selfSigned({ commonName = 'localhost', days = 30 } = {}) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const now = Date.now();
  const name = seq(set(seq(oid('2.5.4.3'), utf8(commonName))));
  const serial = crypto.randomBytes(16);
  serial[0] &= 0x7f; // positive
  const extensions = seq(
    // subjectAltName: DNS localhost, IP 127.0.0.1
    extension('2.5.29.17', false, seq(tlv(0x82, Buffer.from('localhost', 'ascii')), tlv(0x87, Buffer.from([127, 0, 0, 1])))),
    // basicConstraints: CA (it is its own root in the host's pool)
    extension('2.5.29.19', true, seq(bool(true))),
    // keyUsage: digitalSignature, keyCertSign
    extension('2.5.29.15', true, tlv(0x03, Buffer.from([0x02, 0x84]))),
    // extKeyUsage: serverAuth, clientAuth
    extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'), oid('1.3.6.1.5.5.7.3.2'))),
  );
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))), // v3
    integer(serial),
    seq(oid(ECDSA_SHA256)),
    name,
    seq(time(new Date(now - 30_000)), time(new Date(now + days * 86_400_000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, extensions),
  );
  const signature = crypto.sign('sha256', tbs, privateKey); // DER-encoded (r, s)
  const der = seq(tbs, seq(oid(ECDSA_SHA256)), tlv(0x03, Buffer.from([0]), signature));
  const b64 = der.toString('base64').match(/.{1,64}/g).join('\n');
  return {
    der,
    certPem: `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`,
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }),
  };
}

module.exports = { selfSigned };
