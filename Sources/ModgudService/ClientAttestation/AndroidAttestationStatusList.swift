import Crypto
import Foundation
import WebAuthn

/// Google's Android attestation status list (developer.android.com, "Verify hardware-backed
/// key pairs with key attestation", certificate status list): `{"entries": {"<serial hex>":
/// {"status": "REVOKED" | "SUSPENDED", "reason": "KEY_COMPROMISE" | "CA_COMPROMISE" |
/// "SUPERSEDED" | "SOFTWARE_FLAW", ...}}}`. Both statuses are refused (a suspended key is not
/// one to trust while it is suspended). The server never fetches the list: it ships in the
/// binary (`shipped`) and the operator replaces it from a file (`modgud attestation
/// status-list import`), which `AndroidAttestationStatusTable` keeps for every instance.
public struct AndroidAttestationStatusList: Sendable, Equatable {
    public struct Entry: Sendable, Equatable, Codable {
        public var serial: String
        public var status: String
        public var reason: String?
    }

    /// The refused entries, serials normalised (`RevokedSerials`).
    public var entries: [Entry]
    /// SHA-256 of the file it was read from, hex.
    public var sha256: String

    public static let refusedStatuses: Set<String> = ["REVOKED", "SUSPENDED"]

    /// Reads the list in Google's format; throws a message naming what is wrong.
    public init(json: [UInt8]) throws {
        sha256 = SHA256.hash(data: json).map { String(format: "%02x", $0) }.joined()
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any], let raw = object["entries"] as? [String: Any] else {
            throw ServiceRefusal.invalid("StatusList.Malformed", "The status list is not a JSON object with an \"entries\" object.")
        }
        var entries: [Entry] = []
        for (serial, value) in raw.sorted(by: { $0.key < $1.key }) {
            guard !serial.isEmpty, serial.allSatisfy(\.isHexDigit), let entry = value as? [String: Any], let status = entry["status"] as? String else {
                throw ServiceRefusal.invalid("StatusList.Malformed", "Entry \(serial.prefix(64)) needs a hexadecimal serial and a status.")
            }
            guard Self.refusedStatuses.contains(status) else { continue }
            entries.append(Entry(serial: RevokedSerials([serial]).serials.first!, status: status, reason: entry["reason"] as? String))
        }
        self.entries = entries
    }

    /// The serials as `RevokedSerials`.
    public var revokedSerials: RevokedSerials { RevokedSerials(entries.map(\.serial)) }

    /// The list shipped in the binary, used until the operator's first import. Its text is
    /// `AndroidAttestationStatusData.json`; ops/update-android-status-list refreshes it where
    /// the network reaches Google.
    public static let shipped: AndroidAttestationStatusList = {
        do { return try AndroidAttestationStatusList(json: Array(AndroidAttestationStatusData.json.utf8)) } catch {
            preconditionFailure("the shipped Android attestation status list does not parse: \(error)")
        }
    }()
}
