#!/usr/bin/env python3
"""Validates discovery documents with Authlib, a strict OAuth/OIDC library from PyPI (issue 25):
the OpenID document with `OpenIDProviderMetadata.validate()` (OpenID Connect Discovery 1.0) and
the RFC 8414 document with `AuthorizationServerMetadata.validate()`. Reads a JSON object
{"openid": {...}, "oauth": {...}} on standard input; prints "valid" or the first error and exits 1.
"""
import json
import sys

from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from authlib.oidc.discovery import OpenIDProviderMetadata

documents = json.load(sys.stdin)
try:
    OpenIDProviderMetadata(documents["openid"]).validate()
    AuthorizationServerMetadata(documents["oauth"]).validate()
except Exception as error:  # authlib raises ValueError with the member's rule
    print(f"invalid: {error}")
    sys.exit(1)
print("valid")
