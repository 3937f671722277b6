/// The TPM 2.0 structures the `tpm` format carries (TPM 2.0 Library, Part 2), parsed by hand.
enum TPM {
    static let algRSA: UInt16 = 0x0001
    static let algSHA1: UInt16 = 0x0004
    static let algSHA256: UInt16 = 0x000B
    static let algSHA384: UInt16 = 0x000C
    static let algSHA512: UInt16 = 0x000D
    static let algNull: UInt16 = 0x0010
    static let algECC: UInt16 = 0x0023
    static let curveP256: UInt16 = 0x0003
    static let generatedValue: UInt32 = 0xff54_4347
    static let attestCertify: UInt16 = 0x8017

    /// A big-endian cursor that fails instead of trapping.
    struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func u8() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func u16() -> UInt16? {
            guard let high = u8(), let low = u8() else { return nil }
            return UInt16(high) << 8 | UInt16(low)
        }

        mutating func u32() -> UInt32? {
            guard let high = u16(), let low = u16() else { return nil }
            return UInt32(high) << 16 | UInt32(low)
        }

        mutating func take(_ count: Int) -> [UInt8]? {
            guard count >= 0, offset + count <= bytes.count else { return nil }
            defer { offset += count }
            return Array(bytes[offset..<(offset + count)])
        }

        /// A TPM2B: 16-bit size, then that many bytes.
        mutating func sized() -> [UInt8]? {
            guard let size = u16() else { return nil }
            return take(Int(size))
        }

        var atEnd: Bool { offset == bytes.count }
    }

    /// TPMT_PUBLIC: the credential key as the TPM describes it.
    struct Public {
        enum Key {
            case rsa(modulus: [UInt8], exponent: UInt32)
            case ecc(curve: UInt16, x: [UInt8], y: [UInt8])
        }

        var nameAlg: UInt16
        var key: Key

        init?(_ bytes: [UInt8]) {
            var reader = Reader(bytes: bytes)
            guard let type = reader.u16(), let nameAlg = reader.u16(), reader.u32() != nil, reader.sized() != nil else { return nil }
            self.nameAlg = nameAlg
            // parameters: symmetric (+ keyBits, mode unless NULL), scheme (+ hash unless NULL)
            guard let symmetric = reader.u16() else { return nil }
            if symmetric != algNull { guard reader.u16() != nil, reader.u16() != nil else { return nil } }
            guard let scheme = reader.u16() else { return nil }
            if scheme != algNull { guard reader.u16() != nil else { return nil } }
            switch type {
            case algRSA:
                guard reader.u16() != nil, let exponent = reader.u32(), let modulus = reader.sized() else { return nil }
                key = .rsa(modulus: modulus, exponent: exponent == 0 ? 65537 : exponent)
            case algECC:
                guard let curve = reader.u16(), let kdf = reader.u16() else { return nil }
                if kdf != algNull { guard reader.u16() != nil else { return nil } }
                guard let x = reader.sized(), let y = reader.sized() else { return nil }
                key = .ecc(curve: curve, x: x, y: y)
            default:
                return nil
            }
            guard reader.atEnd else { return nil }
        }
    }

    /// TPMS_ATTEST with TPMS_CERTIFY_INFO: what the AIK signed.
    struct Attest {
        var magic: UInt32
        var type: UInt16
        var extraData: [UInt8]
        var attestedName: [UInt8]

        init?(_ bytes: [UInt8]) {
            var reader = Reader(bytes: bytes)
            guard let magic = reader.u32(), let type = reader.u16(), reader.sized() != nil, let extraData = reader.sized(),
                reader.take(17) != nil,  // clockInfo: clock u64, resetCount u32, restartCount u32, safe u8
                reader.take(8) != nil,  // firmwareVersion
                let name = reader.sized(), reader.sized() != nil, reader.atEnd
            else { return nil }
            self.magic = magic
            self.type = type
            self.extraData = extraData
            self.attestedName = name
        }
    }
}
