-- Issue 66: Google's Android attestation status list ("Verify hardware-backed key pairs with
-- key attestation", certificate status list), as the operator last imported it
-- (`modgud attestation status-list import FILE`). Reference data, not an aggregate: every
-- instance reads it at each Android key attestation, so an import takes effect everywhere at
-- once, and the server never calls Google. Until the first import, the list shipped in the
-- binary applies (`AndroidAttestationStatusList.shipped`).
-- `serial` is the certificate serial in lowercase hexadecimal without leading zeros; entries
-- whose status is REVOKED or SUSPENDED are kept (both are refused).
CREATE TABLE android_attestation_status (
  serial text PRIMARY KEY,
  status text NOT NULL,
  reason text
);
-- One row per import: when, how many entries, and the SHA-256 of the file (hex), for the audit.
CREATE TABLE android_attestation_status_imports (
  id bigserial PRIMARY KEY,
  imported_at timestamptz NOT NULL,
  entries integer NOT NULL,
  sha256 text NOT NULL
);
