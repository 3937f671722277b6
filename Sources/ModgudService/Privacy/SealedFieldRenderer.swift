import Foundation
import ModgudDomain
import PQ

/// How operator tools show the sealed fields of an event (`modgud events replay`): a field
/// whose subject was erased reads `[erased]` (a client IP past its retention `[expired]`); a
/// live one stays sealed, or opens when the operator asks (`--open`, with the master key: a
/// data subject's access request). The event's type, time and other fields are as stored.
public final class SealedFieldRenderer {
    public static let erased = "[erased]"

    private let pool: PQPool
    private let vault: PersonalDataVault?
    private let opening: Bool
    /// Which subjects were erased, as far as asked (a replay asks once per subject).
    private var erasedSubjects: [String: Bool] = [:]

    /// - Parameter opening: open live fields (needs `vault`).
    public init(pool: PQPool, vault: PersonalDataVault?, opening: Bool) {
        self.pool = pool
        self.vault = vault
        self.opening = opening
    }

    /// The JSON text with every sealed string replaced as described; text without one is
    /// returned as it is.
    public func render(_ json: String) async throws -> String {
        guard json.contains("\"pd1.") else { return json }
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
        let rendered = try await render(value: object)
        return String(decoding: try JSONSerialization.data(withJSONObject: rendered, options: [.sortedKeys, .fragmentsAllowed]), as: UTF8.self)
    }

    /// Learns in one query which of the subjects sealing `texts` were erased (call it with a
    /// batch's texts before rendering them, so a long replay asks once per batch).
    public func prefetch(_ texts: [String]) async throws {
        var subjects = Set<String>()
        for text in texts where text.contains("\"pd1.") {
            var rest = Substring(text)
            while let start = rest.range(of: "\"pd1.") {
                let after = rest[start.upperBound...]
                guard let end = after.firstIndex(of: "\"") else { break }
                if let sealed = SealedText(stored: "pd1." + after[..<end]), erasedSubjects[sealed.subject] == nil { subjects.insert(sealed.subject) }
                rest = after[end...].dropFirst()
            }
        }
        guard !subjects.isEmpty else { return }
        let asked = Array(subjects)
        let erased = try await SubjectKeysTable.erased(among: asked, pool: pool)
        for subject in asked { erasedSubjects[subject] = erased.contains(subject) }
    }

    private func render(value: Any) async throws -> Any {
        switch value {
        case let object as [String: Any]:
            var out: [String: Any] = [:]
            for (key, inner) in object { out[key] = try await render(value: inner) }
            return out
        case let array as [Any]:
            var out: [Any] = []
            for inner in array { out.append(try await render(value: inner)) }
            return out
        case let text as String:
            guard let sealed = SealedText(stored: text) else { return text }
            return try await render(sealed)
        default:
            return value
        }
    }

    private func render(_ sealed: SealedText) async throws -> String {
        if try await isErased(sealed.subject) {
            return sealed.subject.hasPrefix("ip:") ? PersonalDataVault.expiredAddress : Self.erased
        }
        guard opening, let vault else { return sealed.stored }
        return try await vault.open(sealed) ?? Self.erased
    }

    private func isErased(_ subject: String) async throws -> Bool {
        if let known = erasedSubjects[subject] { return known }
        let erased = try await SubjectKeysTable.erased(among: [subject], pool: pool).contains(subject)
        erasedSubjects[subject] = erased
        return erased
    }
}
