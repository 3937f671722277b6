#!/usr/bin/env python3
"""Writes a fuzz target's seed corpus from real inputs: the WebAuthn vectors
(../shared/webauthn-vectors) and the project's committed regression inputs.

Usage: seeds.py TARGET OUTDIR
"""
import base64
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "..", "shared", "webauthn-vectors")


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def vectors():
    for path in sorted(glob.glob(os.path.join(VECTORS, "*.json"))):
        if path.endswith("index.json"):
            continue
        with open(path) as handle:
            yield os.path.basename(path)[:-5], json.load(handle)


def cbor_items():
    """Attestation objects (CBOR maps) and the COSE keys inside authenticator data are CBOR."""
    for name, vector in vectors():
        response = vector.get("credential", {}).get("response", {})
        for field in ("attestationObject",):
            if isinstance(response.get(field), str):
                try:
                    yield f"{name}.{field}", b64url(response[field])
                except Exception:
                    pass


def main():
    target, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    sources = {"cbor": cbor_items}
    count = 0
    for name, data in sources[target]():
        with open(os.path.join(out, name), "wb") as handle:
            handle.write(data)
        count += 1
    print(f"seeds: {count} inputs for {target}")


if __name__ == "__main__":
    main()
