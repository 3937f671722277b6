import EventSourcing
import Foundation
import ModgudDomain
import PQ

/// Client IPs and user agents in event metadata (issue 13, item 4; issue 43): sealed under a
/// key per UTC day (subject `ip:<yyyy-mm-dd>`), and unreadable once that day's key is shredded
/// after the retention (`MODGUD_IP_RETENTION_DAYS`, default 30). Recent security events keep
/// their addresses and devices; old ones keep everything but. (A user agent names software,
/// but with an address it narrows a person down: it is kept exactly as long.)
extension PersonalDataVault {
    /// What the audit shows for an address whose day key was shredded.
    public static let expiredAddress = "[expired]"

    /// The UTC day of `time` as `yyyy-mm-dd` (the suffix of its address key's subject).
    public static func dayText(_ time: Date) -> String { dayFormat(time) }

    static func addressSubject(_ time: Date) -> String {
        "ip:" + Self.dayFormat(time)
    }

    /// `yyyy-mm-dd` of the UTC day of `time`: the date part of PQ's timestamp text, which is
    /// civil-date arithmetic (this runs on every append, and a Foundation calendar there cost
    /// more than the sealing itself).
    static func dayFormat(_ time: Date) -> String {
        String(PQTimestamp.format(time).prefix(10))
    }

    /// The metadata with its client IP and user agent sealed under the day key of `time`.
    public func sealingAddress(_ metadata: EventMetadata, at time: Date) async throws -> EventMetadata {
        var sealed = metadata
        sealed.clientIP = try await sealingForTheDay(metadata.clientIP, at: time)
        sealed.userAgent = try await sealingForTheDay(metadata.userAgent, at: time)
        return sealed
    }

    /// A metadata text sealed under its day's key; nil when that day is past its retention
    /// already (a clock far behind: keep nothing), unchanged when sealed before.
    private func sealingForTheDay(_ text: String?, at time: Date) async throws -> String? {
        guard let text, SealedText(stored: text) == nil else { return text }
        do {
            return try await seal(text, subject: Self.addressSubject(time), realm: "*").stored
        } catch is SubjectErased {
            return nil
        }
    }

    /// A stored client IP or user agent as the audit shows it: the text, `[expired]` after its
    /// retention, or the text itself when it was stored before sealing began.
    public func openAddress(_ stored: String?) async throws -> String? {
        guard let stored else { return nil }
        guard let sealed = SealedText(stored: stored) else { return stored }
        return try await open(sealed) ?? Self.expiredAddress
    }

    /// Shreds the day keys of every day before `cutoff`'s (UTC); returns how many.
    @discardableResult
    public func shredAddresses(before cutoff: Date) async throws -> Int {
        let subjects = try await Self.shreddingAddresses(before: cutoff, pool: pool)
        for subject in subjects { forget(subject) }
        return subjects.count
    }

    /// As `shredAddresses(before:)`, without the master key (operator tools).
    @discardableResult
    public static func shredAddresses(before cutoff: Date, pool: PQPool) async throws -> Int {
        try await shreddingAddresses(before: cutoff, pool: pool).count
    }

    private static func shreddingAddresses(before cutoff: Date, pool: PQPool) async throws -> [String] {
        let boundary = Self.addressSubject(cutoff)
        let subjects = try await SubjectKeysTable.addressSubjects(before: boundary, pool: pool)
        for subject in subjects { try await shred(subject: subject, realm: "*", pool: pool) }
        return subjects
    }
}

extension Optional where Wrapped == PersonalDataVault {
    /// A metadata text sealed under its day's key (a client IP, a user agent) as operators read
    /// it: opened while the key lives (`PersonalDataVault.openAddress`); without a vault (a tool
    /// started without the master key) plain text as stored and `[sealed]` for sealed text.
    func openForTheDay(_ stored: String?) async throws -> String? {
        if let vault = self { return try await vault.openAddress(stored) }
        return stored.map { SealedText(stored: $0) == nil ? $0 : "[sealed]" }
    }
}
