"""An independent verifier of a Modgud audit log checkpoint and inclusion proof.

Written from the documents alone (docs/operations/audit-log.md, C2SP tlog-checkpoint and
signed-note, RFC 9162 section 2.1.3.2), not from Modgud's code. Reads one JSON object on
stdin: {"checkpoint": <GET .../audit/checkpoint>, "inclusion": <GET .../audit/proof/inclusion>,
"event": {realm, position, stream_id, stream_type, stream_version, type, revision, payload,
metadata, recorded_at_us}}. Prints "ok", or "FAIL: why" and exits 1.
"""
import base64
import hashlib
import json
import struct
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def fail(why):
    print("FAIL: " + why)
    sys.exit(1)


def open_note(note, verifier_key):
    """Returns the note's text if it carries a valid signature by the verifier key."""
    name, key_id, key = verifier_key.split("+", 2)
    raw = base64.b64decode(key)
    if raw[0] != 0x01 or len(raw) != 33:
        fail("not an Ed25519 verifier key")
    if hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4].hex() != key_id:
        fail("the verifier key's id does not match its key")
    text, _, signatures = note.rpartition("\n\n")
    text += "\n"
    for line in signatures.splitlines():
        if not line.startswith("\u2014 " + name + " "):
            continue
        blob = base64.b64decode(line.split(" ")[-1])
        if blob[:4].hex() != key_id:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(raw[1:]).verify(blob[4:], text.encode())
        except InvalidSignature:
            fail("the checkpoint's signature does not verify")
        return name, text
    fail("no signature by " + name)


def leaf_hash(event):
    fields = ["modgud-event/1", event["realm"], str(event["position"]), event["stream_id"], event["stream_type"],
              str(event["stream_version"]), event["type"], str(event["revision"]), event["payload"], event["metadata"],
              str(event["recorded_at_us"])]
    data = b"".join(struct.pack(">I", len(f.encode())) + f.encode() for f in fields)
    return hashlib.sha256(b"\x00" + data).digest()


def root_from_inclusion(leaf, index, size, path):
    """RFC 9162 section 2.1.3.2."""
    if index >= size:
        fail("leaf index beyond the tree")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            fail("proof too long")
        if fn & 1 or fn == sn:
            r = hashlib.sha256(b"\x01" + p + r).digest()
            while fn & 1 == 0 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = hashlib.sha256(b"\x01" + r + p).digest()
        fn >>= 1
        sn >>= 1
    if sn != 0:
        fail("proof too short")
    return r


def main():
    given = json.load(sys.stdin)
    checkpoint, inclusion, event = given["checkpoint"], given["inclusion"], given["event"]
    name, text = open_note(checkpoint["checkpoint"], checkpoint["verifier_key"])
    lines = text.split("\n")
    origin, size, root = lines[0], int(lines[1]), base64.b64decode(lines[2])
    if origin != name:
        fail("the checkpoint names another log")
    if inclusion["tree_size"] != size:
        fail("the proof is for another tree size")
    leaf = leaf_hash(event)
    if base64.b64encode(leaf).decode() != inclusion["leaf_hash"]:
        fail("the event does not hash to the proof's leaf")
    path = [base64.b64decode(h) for h in inclusion["audit_path"]]
    if root_from_inclusion(leaf, inclusion["leaf_index"], size, path) != root:
        fail("the inclusion proof does not lead to the signed root")
    print("ok")


main()
