import CBOR
import Crypto
import WebAuthn
import WebAuthnTesting
import XCTest

/// Builds authenticator data that starts valid; tests change one part.
struct AuthenticatorDataBuilder {
    var rpIDHash = Array(SHA256.hash(data: Array("app.example.com".utf8)))
    var flags: UInt8 = 0x45  // UP, UV, AT
    var signCount: [UInt8] = [0, 0, 0, 7]
    var aaguid = Array(repeating: UInt8(0xaa), count: 16)
    var credentialID = Array(repeating: UInt8(0x01), count: 32)
    var declaredIDLength: Int? = nil
    var publicKey = SoftwareCredential(rpID: "app.example.com", userHandle: [1]).publicKeyCOSE
    var extensions: [UInt8] = []
    var trailing: [UInt8] = []

    var bytes: [UInt8] {
        var out = rpIDHash + [flags] + signCount
        if flags & 0x40 != 0 {
            let length = declaredIDLength ?? credentialID.count
            out += aaguid + [UInt8(length >> 8 & 0xff), UInt8(length & 0xff)] + credentialID + publicKey
        }
        return out + extensions + trailing
    }
}

final class AuthenticatorDataTests: XCTestCase {
    func testValidDataParsesEveryField() throws {
        let builder = AuthenticatorDataBuilder()
        let data = try AuthenticatorData(builder.bytes)
        XCTAssertEqual(data.rpIDHash, builder.rpIDHash)
        XCTAssertEqual(data.flags, [.userPresent, .userVerified, .attestedCredentialData])
        XCTAssertEqual(data.signCount, 7)
        XCTAssertEqual(data.attestedCredential?.aaguid, builder.aaguid)
        XCTAssertEqual(data.attestedCredential?.credentialID, builder.credentialID)
        XCTAssertEqual(data.attestedCredential?.publicKey.encoded, builder.publicKey)
        XCTAssertNil(data.extensions)
    }

    func testAssertionDataWithoutCredentialIs37Bytes() throws {
        var builder = AuthenticatorDataBuilder()
        builder.flags = 0x05
        XCTAssertEqual(builder.bytes.count, 37)
        XCTAssertNil(try AuthenticatorData(builder.bytes).attestedCredential)
        XCTAssertThrowsWebAuthn(.malformedAuthenticatorData(.tooShort)) { _ = try AuthenticatorData(Array(builder.bytes.prefix(36))) }
    }

    func testCredentialIDLengthBeyondTheDataOrTheLimitIsRefused() {
        var longer = AuthenticatorDataBuilder()
        longer.declaredIDLength = 500
        XCTAssertThrowsWebAuthn(.malformedAuthenticatorData(.attestedCredentialTruncated)) { _ = try AuthenticatorData(longer.bytes) }
        var tooLong = AuthenticatorDataBuilder()
        tooLong.credentialID = Array(repeating: 1, count: 1024)
        XCTAssertThrowsWebAuthn(.credentialIDTooLong(1024)) { _ = try AuthenticatorData(tooLong.bytes) }
        var longest = AuthenticatorDataBuilder()
        longest.credentialID = Array(repeating: 1, count: 1023)
        XCTAssertNoThrow(try AuthenticatorData(longest.bytes))
    }

    func testExtensionsMustBeAnnouncedAndPresent() throws {
        var announcedMissing = AuthenticatorDataBuilder()
        announcedMissing.flags |= 0x80
        XCTAssertThrowsWebAuthn(.malformedAuthenticatorData(.extensionsMissing)) { _ = try AuthenticatorData(announcedMissing.bytes) }
        var unannounced = AuthenticatorDataBuilder()
        unannounced.extensions = CBOREncoder.encode(.map([.init(.text("x"), .bool(true))]))
        XCTAssertThrowsError(try AuthenticatorData(unannounced.bytes)) { error in
            XCTAssertEqual((error as? WebAuthnError)?.reason, "malformed_authenticator_data_trailing_bytes")
        }
        var notAMap = AuthenticatorDataBuilder()
        notAMap.flags |= 0x80
        notAMap.extensions = CBOREncoder.encode(.array([]))
        XCTAssertThrowsWebAuthn(.malformedAuthenticatorData(.extensions("not a map"))) { _ = try AuthenticatorData(notAMap.bytes) }
        var good = unannounced
        good.flags |= 0x80
        XCTAssertEqual(try AuthenticatorData(good.bytes).extensions?[text: "x"], .bool(true))
    }

    func testTrailingBytesAreRefused() {
        var builder = AuthenticatorDataBuilder()
        builder.trailing = [0x00]
        XCTAssertThrowsWebAuthn(.malformedAuthenticatorData(.trailingBytes(1))) { _ = try AuthenticatorData(builder.bytes) }
    }

    func testMalformedPublicKeyIsReported() {
        var builder = AuthenticatorDataBuilder()
        builder.publicKey = CBOREncoder.encode(.map([.init(.int(1), .int(2)), .init(.int(3), .int(-7))]))
        XCTAssertThrowsError(try AuthenticatorData(builder.bytes)) { error in
            XCTAssertEqual((error as? WebAuthnError)?.reason, "malformed_public_key")
        }
    }
}

final class ClientDataAndOriginTests: XCTestCase {
    func testClientDataNeedsItsMembers() throws {
        let valid = try CollectedClientData(json: Array(#"{"type":"webauthn.get","challenge":"AA","origin":"https:\/\/a.b"}"#.utf8))
        XCTAssertEqual(valid.origin, "https://a.b", "escaped slashes as some clients send them")
        XCTAssertNil(valid.crossOrigin)
        for bad in [#"{"type":"webauthn.get","challenge":"AA"}"#, "[]", "", #"{"type":1,"challenge":"AA","origin":"x"}"#] {
            XCTAssertThrowsWebAuthn(.malformedClientData) { _ = try CollectedClientData(json: Array(bad.utf8)) }
        }
    }

    func testCredentialJSONNamesWhatIsMissingOrMistyped() {
        XCTAssertThrowsWebAuthn(.malformedCredential("member response is missing")) {
            _ = try AssertionCredential(json: Array(#"{"id":"AA","rawId":"AA","type":"public-key"}"#.utf8))
        }
        XCTAssertThrowsWebAuthn(.malformedCredential("member id has the wrong type")) {
            _ = try RegistrationCredential(json: Array(#"{"id":1,"rawId":"AA","type":"public-key","response":{}}"#.utf8))
        }
        XCTAssertThrowsWebAuthn(.malformedCredential("not a JSON object")) { _ = try AssertionCredential(json: Array("{".utf8)) }
    }

    func testOriginPolicyAcceptsTheRPIDAndItsSubdomainsOverHTTPSOnly() {
        let policy = OriginPolicy.rpID("example.com", plus: ["android:apk-key-hash:abc"])
        for good in ["https://example.com", "https://login.example.com", "https://a.b.example.com", "android:apk-key-hash:abc"] {
            XCTAssertTrue(policy.allows(good), good)
        }
        for bad in [
            "http://example.com", "https://evilexample.com", "https://example.com.evil.io", "https://example.com:8443",
            "https://example.com/", "https://user@example.com", "android:apk-key-hash:other", "https://", "example.com",
        ] {
            XCTAssertFalse(policy.allows(bad), bad)
        }
    }

    /// `localhost` (development): http on any port, as browsers allow; nothing else over http.
    func testOriginPolicyAcceptsPlainHTTPOnlyForLocalhost() {
        let local = OriginPolicy.rpID("localhost")
        for good in ["http://localhost", "http://localhost:8080", "https://localhost", "https://localhost"] { XCTAssertTrue(local.allows(good), good) }
        for bad in ["http://localhost.evil.io", "http://localhost:", "http://localhost:80a", "http://localhost:8080/", "http://localhost@evil.io",
                    "http://127.0.0.1:8080", "http://localhost:1234567"] {
            XCTAssertFalse(local.allows(bad), bad)
        }
        XCTAssertFalse(OriginPolicy.rpID("example.com").allows("http://localhost:8080"))
    }
}

final class COSEKeyTests: XCTestCase {
    private func key(_ entries: [(Int64, CBOR)]) throws -> COSEKey {
        try COSEKey(bytes: CBOREncoder.encode(.map(entries.map { CBORMapEntry(.int($0.0), $0.1) })))
    }

    func testKeysOfEachTypeParse() throws {
        for algorithm in [COSEAlgorithm.es256, .edDSA, .rs256] {
            let credential = SoftwareCredential(algorithm: algorithm, rpID: "x", userHandle: [1])
            XCTAssertEqual(try COSEKey(bytes: credential.publicKeyCOSE).algorithm, algorithm)
        }
    }

    func testMismatchedOrMalformedKeysAreRefused() {
        let x = CBOR.bytes(Array(repeating: 1, count: 32))
        XCTAssertThrowsError(try key([(1, .int(2)), (3, .int(-7)), (-1, .int(1)), (-2, x), (-3, x)])) { error in
            XCTAssertEqual((error as? WebAuthnError)?.reason, "malformed_public_key", "a point not on the curve")
        }
        XCTAssertThrowsWebAuthn(.malformedPublicKey("key type 1 does not match algorithm ES256")) {
            _ = try key([(1, .int(1)), (3, .int(-7)), (-1, .int(6)), (-2, x)])
        }
        XCTAssertThrowsWebAuthn(.unsupportedAlgorithm(-999)) { _ = try key([(1, .int(2)), (3, .int(-999))]) }
        XCTAssertThrowsWebAuthn(.malformedPublicKey("the COSE key has no alg (3)")) { _ = try key([(1, .int(2))]) }
        XCTAssertThrowsWebAuthn(.malformedPublicKey("ES256 needs curve P-256")) {
            _ = try key([(1, .int(2)), (3, .int(-7)), (-1, .int(2)), (-2, x), (-3, x)])
        }
        XCTAssertThrowsWebAuthn(.malformedPublicKey("RSA key needs n and e")) { _ = try key([(1, .int(3)), (3, .int(-257))]) }
    }
}
