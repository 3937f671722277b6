import Crypto
import Foundation
import PQ

/// Personal data encrypted per subject, erased by deleting the subject's key
/// (crypto-shredding; issue 13). The foundation the events and read models build on.
///
/// - Each subject (`user:<id>`, or a challenge stream before any user exists) gets one random
///   AES-256 data key on first use, sealed with AES-256-GCM under an HKDF subkey of the master
///   key (`subject data keys v1`) in `subject_keys`. Two instances sealing for one new subject
///   at once end up with the one key the database kept.
/// - `shred` deletes the key and records the subject in `erased_subjects`: every copy of its
///   ciphertext (events, read models, backups once their copy of `subject_keys` expired) is
///   unreadable, and no new key is ever made for it.
/// - `blindIndex` finds an address without storing it: HMAC-SHA256 under another subkey
///   (`blind index v1`), per realm.
///
/// Keys are held per instance for up to 5 s (the instance that shreds drops its copy at once).
public final class PersonalDataVault: Sendable {
    let pool: PQPool
    private let wrapping: SymmetricKey
    private let indexing: SymmetricKey
    private let cache = SettingsCache<String, [UInt8]?>(maxAge: .seconds(5))

    public init(pool: PQPool, masterKey: [UInt8]) throws {
        guard masterKey.count == 32 else { throw KeySealerError.wrongKeyLength(masterKey.count) }
        self.pool = pool
        let master = SymmetricKey(data: masterKey)
        wrapping = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: master, salt: Array("modgud".utf8), info: Array("subject data keys v1".utf8), outputByteCount: 32)
        indexing = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: master, salt: Array("modgud".utf8), info: Array("blind index v1".utf8), outputByteCount: 32)
    }

    /// The subject was erased: nothing more is sealed for it.
    public struct SubjectErased: Error, Equatable, CustomStringConvertible {
        public var subject: String
        public var description: String { "subject \(subject) was erased" }
    }

    /// Encrypts `text` under the subject's key, creating the key on first use.
    /// - Throws: `SubjectErased` for an erased subject.
    public func seal(_ text: String, subject: String, realm: String) async throws -> SealedText {
        let key = SymmetricKey(data: try await dataKey(subject: subject, realm: realm, create: true)!)
        let box = try AES.GCM.seal(Array(text.utf8), using: key, authenticating: Self.aad(subject))
        return SealedText(box: Array(box.combined!), subject: subject)
    }

    /// The plaintext, or nil when the subject's key is gone (erased) or the text was altered.
    public func open(_ sealed: SealedText) async throws -> String? {
        guard let key = try await dataKey(subject: sealed.subject, realm: "", create: false) else { return nil }
        guard let box = try? AES.GCM.SealedBox(combined: sealed.box),
            let plain = try? AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: Self.aad(sealed.subject))
        else { return nil }
        return String(decoding: plain, as: UTF8.self)
    }

    /// Deletes the subject's key and marks it erased, in one transaction.
    /// - Returns: true when a key was deleted (false: none existed, or erased already).
    @discardableResult
    public func shred(subject: String, realm: String) async throws -> Bool {
        let deleted = try await Self.shred(subject: subject, realm: realm, pool: pool)
        cache.invalidate(subject)
        return deleted
    }

    /// Drops this instance's copy of a subject's key.
    func forget(_ subject: String) {
        cache.invalidate(subject)
    }

    /// Shredding needs no key: operator tools run it without the master key.
    @discardableResult
    public static func shred(subject: String, realm: String, pool: PQPool) async throws -> Bool {
        let row = try await pool.query(
            """
            WITH deleted AS (DELETE FROM subject_keys WHERE subject = \(subject) RETURNING 1),
                 marked AS (INSERT INTO erased_subjects (subject, realm_id) VALUES (\(subject), \(realm)) ON CONFLICT (subject) DO NOTHING RETURNING 1)
            SELECT (SELECT count(*) FROM deleted)::int8, (SELECT count(*) FROM marked)::int8
            """
        ).first
        return try (row?.decode(Int64.self, at: 0) ?? 0) > 0
    }

    /// A keyed hash of a normalized address, for uniqueness and lookups without the address.
    public func blindIndex(_ normalizedEmail: String, realm: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(realm)\u{0}\(normalizedEmail)".utf8), using: indexing)
        return Base64URLText.encode(Array(mac))
    }

    private static func aad(_ subject: String) -> [UInt8] { Array("pd1/\(subject)".utf8) }

    /// The subject's data key (created when `create` and missing), or nil.
    private func dataKey(subject: String, realm: String, create: Bool) async throws -> [UInt8]? {
        if let cached = try await cache.value(for: subject, load: { try await self.load(subject) }) { return cached }
        cache.invalidate(subject)  // absence is not kept: another instance may create the key next
        guard create else { return nil }
        let fresh = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let sealed = try AES.GCM.seal(fresh, using: wrapping, authenticating: Array("subject-key/\(subject)".utf8)).combined!
        // Insert unless erased or present; a concurrent creator's key wins if it committed first.
        for _ in 0..<3 {
            let row = try await pool.query(
                """
                WITH inserted AS (
                    INSERT INTO subject_keys (subject, realm_id, sealed)
                    SELECT \(subject), \(realm), \(PQBytes(Array(sealed)))
                    WHERE NOT EXISTS (SELECT 1 FROM erased_subjects WHERE subject = \(subject))
                    ON CONFLICT (subject) DO NOTHING RETURNING sealed)
                SELECT (SELECT sealed FROM inserted), (SELECT sealed FROM subject_keys WHERE subject = \(subject)),
                       EXISTS (SELECT 1 FROM erased_subjects WHERE subject = \(subject))
                """
            ).first
            guard let row else { continue }
            if try row.decode(Bool.self, at: 2) { throw SubjectErased(subject: subject) }
            let kept = try row.decode(PQBytes?.self, at: 0) ?? row.decode(PQBytes?.self, at: 1)
            guard let kept else { continue }  // the other creator committed after this statement's snapshot
            cache.invalidate(subject)
            return try unwrap(kept.bytes, subject: subject)
        }
        guard let key = try await load(subject) else { throw SubjectErased(subject: subject) }
        return key
    }

    private func load(_ subject: String) async throws -> [UInt8]? {
        guard let row = try await pool.query("SELECT sealed FROM subject_keys WHERE subject = \(subject)").first else { return nil }
        return try unwrap(try row.decode(PQBytes.self, at: 0).bytes, subject: subject)
    }

    private func unwrap(_ sealed: [UInt8], subject: String) throws -> [UInt8] {
        Array(try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: wrapping, authenticating: Array("subject-key/\(subject)".utf8)))
    }
}
