import Crypto
import Foundation
import ModgudDomain
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
/// Keys are held per instance for up to 10 minutes, so a warm user's claims open without a
/// round trip. The instance that shreds drops its copy at once and tells the others
/// (`SettingsChange.subject`); one that missed the notification forgets within that age. A
/// shredded key still held in memory opens nothing new: the user is erased by then.
public final class PersonalDataVault: Sendable {
    let pool: PQPool
    private let wrapping: SymmetricKey
    private let indexing: SymmetricKey
    private let cache = SettingsCache<String, [UInt8]?>(maxAge: .seconds(600), capacity: 50_000)

    public init(pool: PQPool, masterKey: [UInt8]) throws {
        guard masterKey.count == 32 else { throw KeySealerError.wrongKeyLength(masterKey.count) }
        self.pool = pool
        let master = SymmetricKey(data: masterKey)
        wrapping = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: master, salt: Array("modgud".utf8), info: Array("subject data keys v1".utf8), outputByteCount: 32)
        indexing = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: master, salt: Array("modgud".utf8), info: Array("blind index v1".utf8), outputByteCount: 32)
    }

    /// The SQLSTATE `modgud_require_subject_key` raises (migration 0009) when a subject has no
    /// key: the transaction that checked it wrote nothing.
    public static let subjectKeyMissingState = "MGD01"

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

    /// Drops every key this instance holds (the notification listener reconnected).
    func forgetAll() {
        cache.invalidateAll()
    }

    /// The subject of a user's personal data (and of a pending registration's, under the id
    /// the user will get).
    public static func userSubject(_ id: UUID) -> String { "user:" + id.uuidString.lowercased() }

    /// A key for a subject no one has used (a fresh user id): made here, written by the
    /// caller in the transaction of the first event it seals (`NewSubjectKey.insert`), so a
    /// sign-up costs no extra round trip and a failed one leaves no key behind.
    /// - Parameter emailIndex: the blind index of the subject's address, kept beside the key
    ///   (the users projection copies it from there; erasure deletes both).
    public func newSubject(_ subject: String, realm: String, emailIndex: String? = nil) throws -> NewSubjectKey {
        let key = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let sealed = try AES.GCM.seal(key, using: wrapping, authenticating: Array("subject-key/\(subject)".utf8)).combined!
        cache.store(key, for: subject)
        return NewSubjectKey(
            subject: subject, key: key,
            insert: SubjectKeysTable.insert(subject: subject, realm: realm, sealedKey: Array(sealed), emailIndex: emailIndex))
    }

    /// Takes a subject's sealed key that a caller read with its own statement (the refresh
    /// lookup), so opening the subject's data needs no round trip of its own.
    public func adopt(sealedKey: [UInt8], subject: String) throws {
        cache.store(try unwrap(sealedKey, subject: subject), for: subject)
    }

    /// The plaintext of a personal field: legacy plaintext as it is, sealed text opened, nil
    /// when erased.
    public func open(_ text: PersonalText?) async throws -> String? {
        switch text {
        case nil: nil
        case .plain(let plain): plain
        case .sealed(let sealed): try await open(sealed)
        }
    }

    /// Shredding needs no key: operator tools run it without the master key.
    @discardableResult
    public static func shred(subject: String, realm: String, pool: PQPool) async throws -> Bool {
        try await SubjectKeysTable.shred(subject: subject, realm: realm, pool: pool)
    }

    /// Shreds every subject whose key carries this address's blind index in the realm: the
    /// user who has it and any registration still pending for it. Returns the subjects.
    public func shred(emailIndex: String, realm: String) async throws -> [String] {
        let subjects = try await SubjectKeysTable.shred(emailIndex: emailIndex, realm: realm, pool: pool)
        for subject in subjects { cache.invalidate(subject) }
        return subjects
    }

    /// How long a registration's key waits for its user (a code lives 10 minutes).
    public static let abandonedAfter: TimeInterval = 86_400

    /// Shreds the keys of registrations that never created their user (a code that expired
    /// unredeemed, a failed admin creation) made before `cutoff`; returns how many. Their
    /// address and names in the log become unreadable as if erased.
    @discardableResult
    public func shredAbandoned(before cutoff: Date) async throws -> Int {
        let subjects = try await SubjectKeysTable.shredAbandoned(before: cutoff, pool: pool)
        for subject in subjects { cache.invalidate(subject) }
        return subjects.count
    }

    /// A keyed hash of a normalized address, for uniqueness and lookups without the address.
    public func blindIndex(_ normalizedEmail: String, realm: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(realm)\u{0}\(normalizedEmail)".utf8), using: indexing)
        return Base64URLText.encode(Array(mac))
    }

    /// The key of an address's code stream on one UTC day (`StreamNames.emailCodes`): keyed
    /// like the blind index, but a new one every day, so a stream links an address's requests
    /// of one day only (an address that signs up again after erasure gets another stream).
    public func codeStreamKey(_ normalizedEmail: String, realm: String, day: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("codes\u{0}\(realm)\u{0}\(normalizedEmail)\u{0}\(day)".utf8), using: indexing)
        return Base64URLText.encode(Array(mac.prefix(16)))
    }

    static func aad(_ subject: String) -> [UInt8] { Array("pd1/\(subject)".utf8) }

    /// The subject's data key (created when `create` and missing), or nil.
    private func dataKey(subject: String, realm: String, create: Bool) async throws -> [UInt8]? {
        if let cached = try await cache.value(for: subject, load: { try await self.load(subject) }) { return cached }
        cache.invalidate(subject)  // absence is not kept: another instance may create the key next
        guard create else { return nil }
        let fresh = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let sealed = try AES.GCM.seal(fresh, using: wrapping, authenticating: Array("subject-key/\(subject)".utf8)).combined!
        // Insert unless erased or present; a concurrent creator's key wins if it committed first.
        for _ in 0..<3 {
            guard let row = try await SubjectKeysTable.insertUnlessErased(subject: subject, realm: realm, sealedKey: Array(sealed), pool: pool) else {
                continue
            }
            if row.erased { throw SubjectErased(subject: subject) }
            guard let kept = row.inserted ?? row.present else { continue }  // the other creator committed after this statement's snapshot
            cache.invalidate(subject)
            return try unwrap(kept, subject: subject)
        }
        guard let key = try await load(subject) else { throw SubjectErased(subject: subject) }
        return key
    }

    private func load(_ subject: String) async throws -> [UInt8]? {
        guard let sealed = try await SubjectKeysTable.sealedKey(subject: subject, pool: pool) else { return nil }
        return try unwrap(sealed, subject: subject)
    }

    func unwrap(_ sealed: [UInt8], subject: String) throws -> [UInt8] {
        Array(try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: wrapping, authenticating: Array("subject-key/\(subject)".utf8)))
    }
}

extension PQError {
    /// The transaction met an erased subject's missing key (`modgud_require_subject_key`).
    public var meansSubjectKeyMissing: Bool { sqlState == PersonalDataVault.subjectKeyMissingState }
}

extension PersonalDataVault {
    /// How many keys exist and how many were shredded, by kind (operators' status; no master key needed).
    public struct KeyCounts: Sendable, Equatable {
        public var users: Int
        public var erasedUsers: Int
        /// Days whose client-IP key still exists.
        public var addressDays: Int
        /// Days whose client-IP key was shredded past the retention.
        public var expiredAddressDays: Int
    }

    public static func keyCounts(pool: PQPool) async throws -> KeyCounts {
        let counts = try await SubjectKeysTable.counts(pool: pool)
        return KeyCounts(
            users: counts.users, erasedUsers: counts.erasedUsers, addressDays: counts.addressDays, expiredAddressDays: counts.expiredAddressDays)
    }
}
