import X509

/// A set of revoked certificate serial numbers, kept as lowercase hexadecimal without leading
/// zeros (the form Google's attestation status list uses).
public struct RevokedSerials: Sendable, Equatable {
    public private(set) var serials: Set<String>

    public init<S: Sequence>(_ serials: S = [String]()) where S.Element == String {
        self.serials = Set(serials.map(Self.normalised))
    }

    public var isEmpty: Bool { serials.isEmpty }
    public var count: Int { serials.count }

    public func contains(_ serial: Certificate.SerialNumber) -> Bool {
        !serials.isEmpty && serials.contains(Self.hex(serial))
    }

    /// A certificate serial as the status list writes it.
    public static func hex(_ serial: Certificate.SerialNumber) -> String {
        normalised(serial.bytes.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined())
    }

    static func normalised(_ hex: String) -> String {
        let trimmed = hex.lowercased().drop { $0 == "0" }
        return trimmed.isEmpty ? "0" : String(trimmed)
    }
}
