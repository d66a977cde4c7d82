"""A Pith hook plugin in Python, written from docs/protocol.md alone.

It speaks go-plugin's protocol without any Pith code: check the magic
cookie and the offered protocol versions, make a self-signed certificate
for AutoMTLS (python3-cryptography), serve pith.hooks.v1.Hooks over TLS
with client certificates on a unix socket (python3-grpcio), print the
handshake line, log hclog JSON lines on stderr, and exit on Shutdown or
when the host is gone.

It handles two events: session_before_compact (it cancels a session
labelled "no-compact") and session.compacting (it adds a context line
naming the files the compacted part read and modified).

Run it as `python3 plugin.py` with the stubs of gen.sh on PYTHONPATH or in
PITH_PYTHON_STUBS (default ./gen beside this file).
"""

import base64
import datetime
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from concurrent import futures

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("PITH_PYTHON_STUBS", os.path.join(HERE, "gen")))

import grpc  # noqa: E402
from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # noqa: E402

from pith.hooks.v1 import hooks_pb2, hooks_pb2_grpc  # noqa: E402

NAME = "python-example"
VERSION = "1.0.0"

# docs/protocol.md, "Handshake".
MAGIC_COOKIE_KEY = "PITH_PLUGIN_MAGIC_COOKIE"
MAGIC_COOKIE_VALUE = "5b1c1d0e-pith-hooks-v1-8f3a2c77d9e4"
CORE_PROTOCOL_VERSION = 1
APP_PROTOCOL_VERSION = 1
MAX_MESSAGE = 256 << 20

EVENTS = ["session_before_compact", "session.compacting"]


def log(level, message, **fields):
    """One hclog JSON line on stderr; the host logs it under the plugin's name."""
    line = {"@level": level, "@message": message,
            "@timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    line.update(fields)
    sys.stderr.write(json.dumps(line) + "\n")
    sys.stderr.flush()


def self_signed():
    """A certificate as go-plugin makes its own: ECDSA, its own CA, for localhost."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(seconds=30))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=True,
                                     content_commitment=False, data_encipherment=False, key_agreement=True,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return key_pem, cert.public_bytes(serialization.Encoding.PEM), cert.public_bytes(serialization.Encoding.DER)


class Hooks(hooks_pb2_grpc.HooksServicer):
    def __init__(self, stop):
        self.stop = stop

    def Describe(self, request, context):
        log("debug", "described", configured_name=request.configured_name, host_version=request.host_version)
        return hooks_pb2.DescribeResponse(name=NAME, version=VERSION, events=EVENTS)

    def BeforeCompact(self, request, context):
        for label in request.labels:
            if label.label == "no-compact":
                log("info", "refusing to compact", session=request.session_id, entry=label.entry_id)
                return hooks_pb2.BeforeCompactResponse(
                    cancel=hooks_pb2.Cancel(reason="session is labelled no-compact (python)"))
        return hooks_pb2.BeforeCompactResponse()  # no opinion

    def Compacting(self, request, context):
        line = "python plugin was here: %d messages, read %s, modified %s, keeping from %s" % (
            len(request.messages), ",".join(request.read_files) or "-", ",".join(request.modified_files) or "-",
            request.first_kept_entry_id or "-")
        log("info", "compacting", session=request.session_id, messages=len(request.messages))
        return hooks_pb2.CompactingResponse(context=[line])

    def Ping(self, request, context):
        return hooks_pb2.PingResponse()

    def Shutdown(self, request, context):
        # Answer first, then stop: the host waits for the answer.
        threading.Timer(0.05, self.stop).start()
        return hooks_pb2.ShutdownResponse()


def watch_host(stop):
    """Exit once the host is gone (docs/protocol.md, "Watchdog")."""
    ppid = os.getppid()
    pid = int(os.environ.get("PITH_HOST_PID", "0") or 0)
    while True:
        time.sleep(0.5)
        alive = os.getppid() == ppid
        if alive and pid > 0:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                alive = False
            except PermissionError:
                pass
        if not alive:
            log("warn", "host process is gone; exiting")
            remove_socket_dir()
            stop()
            return


def remove_socket_dir():
    """Remove the private directory the host made for this plugin's sockets
    (PLUGIN_UNIX_SOCKET_DIR): the host removes it when it stops the plugin,
    but a host that is gone cannot. Only a directory named as go-plugin
    names it is removed."""
    d = os.environ.get("PLUGIN_UNIX_SOCKET_DIR", "")
    if d and os.path.isabs(d) and os.path.basename(d).startswith("plugin-dir"):
        shutil.rmtree(d, ignore_errors=True)


def main():
    if os.environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        sys.stderr.write("This is a Pith plugin: list it in Pith's configuration and Pith starts it.\n")
        return 1
    offered = [v.strip() for v in os.environ.get("PLUGIN_PROTOCOL_VERSIONS", str(APP_PROTOCOL_VERSION)).split(",")]
    if str(APP_PROTOCOL_VERSION) not in offered:
        log("error", "host offers protocol versions %s; this plugin speaks %d" % (",".join(offered), APP_PROTOCOL_VERSION))
        return 1

    done = threading.Event()
    options = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=options)

    def stop():
        server.stop(grace=0.5)
        done.set()

    hooks_pb2_grpc.add_HooksServicer_to_server(Hooks(stop), server)

    sockdir = tempfile.mkdtemp(prefix="pith-python-plugin-", dir=os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or None)
    socket = os.path.join(sockdir, "plugin.sock")
    cert_field = ""
    client_cert = os.environ.get("PLUGIN_CLIENT_CERT", "")
    if client_cert:
        key_pem, cert_pem, cert_der = self_signed()
        creds = grpc.ssl_server_credentials([(key_pem, cert_pem)], root_certificates=client_cert.encode(),
                                            require_client_auth=True)
        server.add_secure_port("unix:" + socket, creds)
        # Raw DER, base64 without padding (Go's RawStdEncoding).
        cert_field = base64.b64encode(cert_der).decode().rstrip("=")
    else:
        server.add_insecure_port("unix:" + socket)
    server.start()

    # Ctrl-C reaches the whole process group; the host decides when plugins stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: stop())
    threading.Thread(target=watch_host, args=(stop,), daemon=True).start()

    fields = [str(CORE_PROTOCOL_VERSION), str(APP_PROTOCOL_VERSION), "unix", socket, "grpc"]
    if cert_field:
        fields.append(cert_field)
    sys.stdout.write("|".join(fields) + "\n")
    sys.stdout.flush()
    log("debug", "serving", socket=socket, mtls=bool(cert_field))

    done.wait()
    try:
        os.unlink(socket)
        os.rmdir(sockdir)
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
