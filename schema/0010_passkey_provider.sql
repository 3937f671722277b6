-- 0010: the passkey directory keeps each credential's AAGUID (issue 14), so lists name the
-- provider that holds it ("iCloud Keychain", "Google Password Manager", a security key).
-- Existing rows take it from their enrollment event.
ALTER TABLE passkeys ADD COLUMN aaguid text;
UPDATE passkeys p SET aaguid = e.payload->>'aaguid'
FROM events e
WHERE e.type = 'passkey.enrolled' AND e.stream_id = 'passkey-' || p.passkey_id::text;
