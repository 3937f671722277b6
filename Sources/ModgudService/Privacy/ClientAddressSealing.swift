import EventSourcing
import Foundation
import PQ

/// Client IPs in event metadata (issue 13, item 4): sealed under a key per UTC day
/// (subject `ip:<yyyy-mm-dd>`), and unreadable once that day's key is shredded after the
/// retention (`MODGUD_IP_RETENTION_DAYS`, default 30). Recent security events keep their
/// addresses; old ones keep everything but.
extension PersonalDataVault {
    /// What the audit shows for an address whose day key was shredded.
    public static let expiredAddress = "[expired]"

    /// The UTC day of `time` as `yyyy-mm-dd` (the suffix of its address key's subject).
    public static func dayText(_ time: Date) -> String { dayFormat(time) }

    static func addressSubject(_ time: Date) -> String {
        "ip:" + Self.dayFormat(time)
    }

    /// `yyyy-mm-dd` of the UTC day of `time`, by arithmetic: this runs on every append, and a
    /// Foundation calendar there cost more than the sealing itself.
    static func dayFormat(_ time: Date) -> String {
        let (year, month, day) = civilDate(daysSinceEpoch: Int((time.timeIntervalSince1970 / 86_400).rounded(.down)))
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))"
    }

    /// The proleptic Gregorian date of a day count from 1970-01-01 (the inverse of
    /// H. Hinnant's days_from_civil).
    static func civilDate(daysSinceEpoch: Int) -> (year: Int, month: Int, day: Int) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The metadata with its client IP sealed under the day key of `time`.
    public func sealingAddress(_ metadata: EventMetadata, at time: Date) async throws -> EventMetadata {
        guard let address = metadata.clientIP, SealedText(stored: address) == nil else { return metadata }
        var sealed = metadata
        do {
            sealed.clientIP = try await seal(address, subject: Self.addressSubject(time), realm: "*").stored
        } catch is SubjectErased {
            sealed.clientIP = nil  // that day is past its retention already (a clock far behind): keep no address
        }
        return sealed
    }

    /// A stored client IP as the audit shows it: the address, `[expired]` after its
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
        let subjects = try await pool.query(
            "SELECT subject FROM subject_keys WHERE subject LIKE 'ip:%' AND subject < \(boundary) ORDER BY subject"
        ).rows.map { try $0.decode(String.self, at: 0) }
        for subject in subjects { try await shred(subject: subject, realm: "*", pool: pool) }
        return subjects
    }
}
