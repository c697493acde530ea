"""E-mail over an encrypted connection to a real SMTP server on loopback (aiosmtpd): STARTTLS
and TLS from the start, each with a sign-in the server only takes once the connection is
encrypted; a certificate the runner does not trust, or a wrong password, sends nothing and is
tried again later rather than given up (neither is the address's fault)."""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from reportexport.mail.message import Announcement, build_message
from reportexport.mail.smtp import SmtpServer, send
from tests.effects.smtp_server import Mailbox, running_mailbox

# aiosmtpd warns whenever AUTH is required without its STARTTLS-only `auth_require_tls`, which
# is how a server encrypted from the start (security "tls") has to be set up.
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning")

ALICE = "alice@example.com"
USER, PASSWORD = "reports", "s3cret"


class Authority:
    """A certificate authority of the test's own and the server certificate it signed for
    127.0.0.1, written as PEM files."""

    def __init__(self, folder: Path) -> None:
        now = datetime.now(UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "reportexport test CA")])
        ca = (
            x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
            .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(hours=1)).not_valid_after(now + timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                         crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256())
        )  # fmt: skip
        key = ec.generate_private_key(ec.SECP256R1())
        server = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(hours=1)).not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256())
        )  # fmt: skip
        self.ca_file = folder / "ca.pem"
        self.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        self.cert_file = folder / "server.pem"
        self.cert_file.write_bytes(server.public_bytes(serialization.Encoding.PEM))
        self.key_file = folder / "server-key.pem"
        self.key_file.write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))  # fmt: skip

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


class SecureMailbox(Mailbox):
    """A mailbox that also notes whether each message came over an encrypted connection."""

    encrypted: list[bool]

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.encrypted.append(server.transport.get_extra_info("ssl_object") is not None)
        return await super().handle_DATA(server, session, envelope)


def sign_in(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
    good = isinstance(data, LoginPassword) and (data.login, data.password) == (
        USER.encode(),
        PASSWORD.encode(),
    )
    return AuthResult(success=good, handled=False)


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return Authority(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def trusted(authority: Authority, monkeypatch: pytest.MonkeyPatch) -> Authority:
    """The runner trusts the test's authority as it trusts the system's (OpenSSL reads
    SSL_CERT_FILE each time a default context loads its certificates)."""
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.ca_file))
    return authority


def secure_mailbox(authority: Authority, security: str) -> Iterator[SecureMailbox]:
    mailbox = SecureMailbox()
    mailbox.encrypted = []
    common = {"authenticator": sign_in, "auth_required": True}
    if security == "tls":
        # aiosmtpd's auth_require_tls only knows STARTTLS: on a connection encrypted from the
        # start it would not offer AUTH at all.
        options = {"ssl_context": authority.server_context(), "auth_require_tls": False, **common}
    else:
        options = {"tls_context": authority.server_context(), "require_starttls": True,
                   "auth_require_tls": True, **common}  # fmt: skip
    with running_mailbox(mailbox, **options) as running:
        yield running


@pytest.fixture(params=["starttls", "tls"])
def security(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def mailbox(authority: Authority, security: str) -> Iterator[SecureMailbox]:
    yield from secure_mailbox(authority, security)


def server(mailbox: Mailbox, security: str, password: str = PASSWORD) -> SmtpServer:
    return SmtpServer(host=mailbox.host, port=mailbox.port, security=security, user=USER,
                      password=password, sender="reports@example.com",
                      timeout_seconds=10)  # fmt: skip


def message() -> EmailMessage:
    made = Announcement(job_id=1, effect="emit_done_webhook", succeeded=True,
                        title="Orders of one day", parameters={"day": "2026-12-02"},
                        job_url="http://127.0.0.1:8000/jobs/1")  # fmt: skip
    return build_message(made, sender="reports@example.com", recipient=ALICE,
                         sent_at=datetime(2026, 12, 2, 8, tzinfo=UTC))  # fmt: skip


def test_a_message_goes_over_an_encrypted_connection_after_signing_in(
    trusted: Authority, mailbox: SecureMailbox, security: str
) -> None:
    sent = send(server(mailbox, security), message(), ALICE)
    assert (sent.delivered, sent.code, sent.problem) == (True, 250, None)
    (received,) = mailbox.messages_to(ALICE)
    assert received["Subject"] == "Orders of one day — 2026-12-02 — ready"
    assert mailbox.encrypted == [True]


def test_a_wrong_password_sends_nothing_and_is_tried_again(
    trusted: Authority, mailbox: SecureMailbox, security: str
) -> None:
    sent = send(server(mailbox, security, password="wrong"), message(), ALICE)
    assert (sent.delivered, sent.refused, sent.code) == (False, False, 535)
    assert sent.problem is not None
    assert sent.problem.startswith("SMTP 535")
    assert mailbox.received == []


def test_a_certificate_the_runner_does_not_trust_sends_nothing_and_is_tried_again(
    authority: Authority, mailbox: SecureMailbox, security: str,
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:  # fmt: skip
    empty = tmp_path / "no-authority.pem"
    empty.write_text("")
    monkeypatch.setenv("SSL_CERT_FILE", str(empty))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    sent = send(server(mailbox, security), message(), ALICE)
    assert (sent.delivered, sent.refused) == (False, False)
    assert sent.problem is not None
    assert "CERTIFICATE_VERIFY_FAILED" in sent.problem
    assert mailbox.received == []
