-- DPoP (issue 29): the thumbprint of the key an access token is bound to, so introspection
-- reports `cnf.jkt` for reference tokens (RFC 9449 section 6.2) and resource servers can
-- check the binding. Null: a bearer token.
ALTER TABLE access_tokens ADD COLUMN jkt text;
