'use strict';
// A Pith hook plugin in Node.js. The hook protocol is plain gRPC behind
// hashicorp/go-plugin's handshake, so any language can implement it; this
// file is the whole plugin, without Pith's Go SDK:
//
//  1. check the magic cookie and the protocol versions the host offers;
//  2. mutual TLS: trust the host's client certificate (PLUGIN_CLIENT_CERT),
//     make a self-signed server certificate and require TLS with client
//     certificates;
//  3. serve pith.hooks.v1.Hooks and grpc.health.v1.Health on a unix socket;
//  4. print go-plugin's handshake line on stdout:
//     CORE-PROTOCOL-VERSION|APP-PROTOCOL-VERSION|NETWORK-TYPE|NETWORK-ADDR|PROTOCOL|SERVER-CERT
//  5. log hclog-style JSON lines on stderr, which the host parses;
//  6. exit on Shutdown, or when the host process is gone.
//
// It handles one event, session.compacting, and adds a context line.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { selfSigned } = require('./cert');

const NAME = 'node-example';
const VERSION = require('./package.json').version;

// Must match internal/wire.Handshake on the host.
const MAGIC_COOKIE_KEY = 'PITH_PLUGIN_MAGIC_COOKIE';
const MAGIC_COOKIE_VALUE = '5b1c1d0e-pith-hooks-v1-8f3a2c77d9e4';
const CORE_PROTOCOL_VERSION = 1; // go-plugin's own
const APP_PROTOCOL_VERSION = 1; // proto/pith/hooks/v1
const MAX_MESSAGE = 256 * 1024 * 1024; // sessions cross whole: as the host

const EVENTS = ['session.compacting'];

// log writes one hclog JSON line to stderr; the host logs it under the
// plugin's configured name.
function log(level, message, fields = {}) {
  process.stderr.write(JSON.stringify({ '@level': level, '@message': message, '@timestamp': new Date().toISOString(), ...fields }) + '\n');
}

function fail(message) {
  log('error', message);
  process.stderr.write(message + '\n');
  process.exit(1);
}

function loadProtos() {
  // hooks.proto imports its neighbours by their path under proto/.
  const opts = { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true,
    includeDirs: [path.join(__dirname, '..', '..', 'proto')] };
  const hooksProto = path.join(__dirname, '..', '..', 'proto', 'pith', 'hooks', 'v1', 'hooks.proto');
  const hooks = grpc.loadPackageDefinition(protoLoader.loadSync(hooksProto, opts));
  const health = grpc.loadPackageDefinition(protoLoader.loadSync(path.join(__dirname, 'proto', 'health.proto'), opts));
  return { Hooks: hooks.pith.hooks.v1.Hooks, Health: health.grpc.health.v1.Health };
}

// The plugin's handlers. Unimplemented events are never sent: Describe does
// not list them.
function hooksService(shutdown) {
  const unimplemented = (call, cb) => cb({ code: grpc.status.UNIMPLEMENTED, details: 'not handled by this plugin' });
  return {
    Describe(call, cb) {
      log('debug', 'described', { configured_name: call.request.configuredName, host_version: call.request.hostVersion });
      cb(null, { name: NAME, version: VERSION, events: EVENTS });
    },
    Compacting(call, cb) {
      const n = call.request.messages.length;
      const prefix = call.request.turnPrefixMessages.length;
      const line = `node plugin was here: ${n} messages` + (prefix ? ` (+${prefix} in the split turn)` : '');
      const reason = String(call.request.reason).replace(/^REASON_/, '').toLowerCase(); // "threshold", as in docs/behaviour.md §13
      log('info', 'compacting', { session: call.request.sessionId, reason, messages: n });
      cb(null, { context: [line] });
    },
    BeforeCompact: unimplemented,
    Compact: unimplemented,
    BeforeTree: unimplemented,
    Tree: unimplemented,
    Ping(call, cb) {
      cb(null, {});
    },
    Shutdown(call, cb) {
      cb(null, {});
      setImmediate(shutdown); // after the answer is on its way
    },
  };
}

function healthService() {
  const status = (service) => (service === '' || service === 'plugin' ? 'SERVING' : null);
  return {
    Check(call, cb) {
      const s = status(call.request.service);
      if (!s) return cb({ code: grpc.status.NOT_FOUND, details: `unknown service ${call.request.service}` });
      cb(null, { status: s });
    },
    Watch(call) {
      call.write({ status: status(call.request.service) || 'SERVICE_UNKNOWN' });
      // Statuses never change while the process lives; the stream stays
      // open until the host cancels it.
    },
  };
}

// removeSocketDir removes the private directory the host made for this
// plugin's sockets (PLUGIN_UNIX_SOCKET_DIR): the host removes it when it
// stops the plugin, but a host that is gone cannot. Only a directory named
// as go-plugin names it is removed.
function removeSocketDir() {
  const dir = process.env.PLUGIN_UNIX_SOCKET_DIR;
  if (dir && path.isAbsolute(dir) && path.basename(dir).startsWith('plugin-dir')) {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// watchHost exits when the host process is gone, so a SIGKILLed host leaves
// no plugin behind.
function watchHost(exit) {
  const pid = Number(process.env.PITH_HOST_PID || process.ppid);
  const startPpid = process.ppid;
  const timer = setInterval(() => {
    let alive = process.ppid === startPpid;
    if (alive && pid > 0) {
      try {
        process.kill(pid, 0);
      } catch (e) {
        alive = e.code === 'EPERM';
      }
    }
    if (!alive) {
      log('warn', 'host process is gone; exiting');
      exit();
    }
  }, 1000);
  timer.unref();
}

function main() {
  if (process.env[MAGIC_COOKIE_KEY] !== MAGIC_COOKIE_VALUE) {
    process.stderr.write('This binary is a plugin for Pith. It is started by the pith host, not run directly.\n');
    process.exit(1);
  }
  const offered = (process.env.PLUGIN_PROTOCOL_VERSIONS || String(APP_PROTOCOL_VERSION)).split(',').map((v) => Number(v.trim()));
  if (!offered.includes(APP_PROTOCOL_VERSION)) {
    fail(`host offers plugin protocol versions ${offered.join(',')}; this plugin speaks ${APP_PROTOCOL_VERSION}`);
  }

  // Without a client certificate the host did not ask for TLS.
  let credentials = grpc.ServerCredentials.createInsecure();
  let certField = '';
  const clientCert = process.env.PLUGIN_CLIENT_CERT;
  if (clientCert) {
    const server = selfSigned();
    credentials = grpc.ServerCredentials.createSsl(Buffer.from(clientCert), [{ private_key: Buffer.from(server.keyPem), cert_chain: Buffer.from(server.certPem) }], true);
    // The raw DER, base64 without padding (Go's RawStdEncoding): the line
    // protocol has no room for PEM's newlines.
    certField = server.der.toString('base64').replace(/=+$/, '');
  }

  // go-plugin names the directory for sockets when the host configures one.
  const base = process.env.PLUGIN_UNIX_SOCKET_DIR || os.tmpdir();
  const dir = fs.mkdtempSync(path.join(base, 'pith-node-plugin-'));
  const socket = path.join(dir, 'plugin.sock');
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  process.on('exit', cleanup);

  const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_MESSAGE, 'grpc.max_send_message_length': MAX_MESSAGE });
  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    log('debug', 'shutting down');
    const force = setTimeout(() => process.exit(0), 1000);
    force.unref();
    server.tryShutdown(() => process.exit(0));
  };
  const { Hooks, Health } = loadProtos();
  server.addService(Hooks.service, hooksService(shutdown));
  server.addService(Health.service, healthService());

  // Ctrl-C in a terminal reaches the whole process group; the host decides
  // when its plugins stop, as go-plugin's Go servers do.
  process.on('SIGINT', () => log('debug', 'ignoring SIGINT; the host stops plugins'));
  process.on('SIGTERM', shutdown);
  watchHost(() => {
    removeSocketDir();
    process.exit(0);
  });

  server.bindAsync('unix:' + socket, credentials, (err) => {
    if (err) fail(`listen on ${socket}: ${err.message}`);
    const fields = [CORE_PROTOCOL_VERSION, APP_PROTOCOL_VERSION, 'unix', socket, 'grpc'];
    if (certField) fields.push(certField);
    process.stdout.write(fields.join('|') + '\n');
    log('debug', 'serving', { socket, mtls: Boolean(certField) });
  });
}

main();
