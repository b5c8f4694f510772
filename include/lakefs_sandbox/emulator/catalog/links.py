"""
Link addresses: ``getPhysicalAddress`` hands out a signed address, ``linkPhysicalAddress`` stages it.

The signature is lakeFS's: an HMAC-SHA256 over the JSON of repository, branch, path and address,
so an address links only where it was handed out, and only within the grace period.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re

from lakefs_gc.lakefs.graveler import FULL, RELATIVE, Entry
from lakefs_sandbox.emulator.catalog.staging import Staging
from lakefs_sandbox.emulator.errors import APIError
from lakefs_sandbox.emulator.xid import xid_time

RAW_URL_B64 = re.compile(r"[A-Za-z0-9_-]*")


_GO_JSON_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def _go_json_string(s: str) -> str:
    r"""
    Return a string as Go's ``json.Marshal`` writes it (Go 1.22+).

    ``"`` and ``\`` escaped, ``\b \f \n \r \t`` by name, other control characters ``\u00xx``,
    HTML-escaped (``<``, ``>``, ``&``), U+2028/U+2029 escaped, anything else as UTF-8 (a lone
    surrogate, invalid UTF-8 to Go, as U+FFFD).
    """
    out = []
    for ch in s:
        if ch in _GO_JSON_ESCAPES:
            out.append(_GO_JSON_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _address_json(repo: str, branch: str, path: str, address: str) -> bytes:
    """
    Return what lakeFS signs for a link address (``catalog.getAddressJSON``).

    ``json.Marshal`` of a struct of Repository, Branch, Path and PhysicalAddress, in that order.
    """
    fields = (("Repository", repo), ("Branch", branch), ("Path", path), ("PhysicalAddress", address))
    return ("{" + ",".join(f'"{k}":{_go_json_string(v)}' for k, v in fields) + "}").encode()


class Links(Staging):
    """Signed link addresses, handed out and linked."""

    def _hmac(self, repo: str, branch: str, path: str, address: str) -> bytes:
        """
        Return the link-address HMAC-SHA256 over what lakeFS signs (``catalog.getAddressJSON``).

        The JSON of repository, branch, path and address, so that an address links only under the
        repository, branch and path it was handed out for.
        """
        return hmac.new(self._signing_key, _address_json(repo, branch, path, address), hashlib.sha256).digest()

    def _sign(self, repo: str, branch: str, path: str, address: str) -> str:
        """Return the signature, URL-safe base64 without padding (43 characters), as lakeFS's ``signAddress``."""
        return base64.urlsafe_b64encode(self._hmac(repo, branch, path, address)).rstrip(b"=").decode()

    def get_physical_address(self, repo: str, branch: str, path: str) -> tuple[dict, str, str]:
        """
        Return (repo, the key to write: the relative address with ``,<signature>``, the full URI of that key).

        As lakeFS 1.84 (``GetPhysicalAddress``): only the repository is looked up, so a branch that
        does not exist gets an address too (linking it then answers the missing branch).
        """
        with self.lock:
            r = self._repo_row(repo)
            address = self.new_address()
            key = address + "," + self._sign(repo, branch, path, address)
            return r, key, self.full_uri(r["storage_namespace"], key)

    def link_physical_address(
        self,
        repo: str,
        branch: str,
        path: str,
        physical: str,
        checksum: str,
        size: int,
        content_type: str,
        metadata: dict[str, str] | None,
    ) -> tuple[dict, Entry]:
        """
        Link an address, as lakeFS's ``LinkPhysicalAddress``.

        In its order: the repository, the address (verified when relative), then the entry staged
        on the branch (``CreateEntry``: a missing branch answers 404 only after the address passed).
        """
        with self.lock:
            r = self._repo_row(repo)
            # lakeFS's normalizePhysicalAddress (pkg/api/controller.go): relative only when under
            # "<namespace as written>/data/", and then stored *with* its ",<signature>" suffix (the
            # object key the client wrote to); anything else is FULL, unverified. On the local
            # blockstore the address lakeFS hands out is the resolved form, so it links as FULL.
            prefix = r["storage_namespace"].rstrip("/") + "/"
            if physical.startswith(prefix + "data/"):  # lakeFS's Catalog.VerifyLinkAddress
                address = physical[len(prefix) :]
                unsigned, sep, sig = address.rpartition(",")
                if not sep:
                    raise APIError(400, "address is not signed: link address invalid")
                try:  # Go's base64.RawURLEncoding: that alphabet only, no padding
                    if not RAW_URL_B64.fullmatch(sig) or len(sig) % 4 == 1:
                        raise ValueError(sig)
                    given = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
                except (ValueError, binascii.Error):
                    signed = _address_json(repo, branch, path, unsigned).decode()
                    raise APIError(400, f"malformed address signature: {signed}: link address invalid") from None
                if not hmac.compare_digest(given, self._hmac(repo, branch, path, unsigned)):
                    raise APIError(400, "invalid address signature: invalid address")
                try:
                    issued = xid_time(unsigned.rsplit("/", 1)[-1])
                except (ValueError, binascii.Error):
                    raise APIError(400, "link address invalid") from None
                if self.now() - issued > self.s.grace_period:
                    raise APIError(400, "link address expired")
                address_type = RELATIVE
            else:
                address, address_type = physical, FULL
            self._branch(repo, branch)
            now = self.now()
            sec = int(now)
            e = Entry(
                address,
                int(size),
                checksum,
                sec,
                int((now - sec) * 1e9),
                dict(metadata or {}),
                address_type,
                content_type or "application/octet-stream",
            )
            self._stage(repo, branch, path, e)
            return r, e
