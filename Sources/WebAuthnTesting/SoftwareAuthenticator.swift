import CBOR
import Crypto
import Foundation
import WebAuthn

/// A software authenticator that produces real attestations and assertions, so that every
/// passkey flow can be driven end to end without a device. Each ceremony takes an options
/// value that starts valid; tests change one field to build a negative case.
public struct SoftwareAuthenticator: Sendable {
    /// The attestation statement to produce.
    public enum Attestation: Sendable {
        case none
        /// `packed` self attestation: signed by the credential key itself.
        case packedSelf
    }

    /// How to answer navigator.credentials.create().
    public struct RegistrationOptions: Sendable {
        public var challenge: [UInt8]
        public var origin: String
        public var attestation: Attestation = .none
        public var flags: AuthenticatorFlags = [.userPresent, .userVerified]
        public var clientDataType = "webauthn.create"
        public var crossOrigin: Bool? = nil
        /// Sign the rpIdHash of this RP ID instead of the credential's (to test mismatches).
        public var rpIDOverride: String? = nil
        public var extensions: CBOR? = nil
        public var transports: [String] = ["internal"]

        public init(challenge: [UInt8], origin: String) {
            self.challenge = challenge
            self.origin = origin
        }
    }

    /// How to answer navigator.credentials.get().
    public struct AssertionOptions: Sendable {
        public var challenge: [UInt8]
        public var origin: String
        public var flags: AuthenticatorFlags = [.userPresent, .userVerified]
        public var clientDataType = "webauthn.get"
        public var crossOrigin: Bool? = nil
        public var rpIDOverride: String? = nil
        /// The counter to report; nil increments the credential's counter.
        public var signCount: UInt32? = nil
        /// Send the user handle (passkeys do).
        public var includeUserHandle = true

        public init(challenge: [UInt8], origin: String) {
            self.challenge = challenge
            self.origin = origin
        }
    }

    /// The authenticator model's AAGUID (zero for a plain software authenticator).
    public var aaguid: [UInt8]

    public init(aaguid: [UInt8] = Array(repeating: 0, count: 16)) {
        self.aaguid = aaguid
    }

    /// Creates the registration response for `credential`.
    public func register(_ credential: SoftwareCredential, _ options: RegistrationOptions) -> RegistrationCredential {
        let clientDataJSON = Self.clientData(
            type: options.clientDataType, challenge: options.challenge, origin: options.origin, crossOrigin: options.crossOrigin)
        var flags = options.flags.union(.attestedCredentialData)
        if options.extensions != nil { flags.insert(.extensionData) }
        var authenticatorData = Self.header(rpID: options.rpIDOverride ?? credential.rpID, flags: flags, signCount: credential.signCount)
        authenticatorData += aaguid
        authenticatorData += [UInt8(credential.id.count >> 8), UInt8(credential.id.count & 0xff)] + credential.id
        authenticatorData += credential.publicKeyCOSE
        if let extensions = options.extensions { authenticatorData += CBOREncoder.encode(extensions) }

        let statement: CBOR
        switch options.attestation {
        case .none:
            statement = .map([])
        case .packedSelf:
            let signature = credential.sign(authenticatorData + Array(SHA256.hash(data: clientDataJSON)))
            statement = .map([.init(.text("alg"), .int(credential.algorithm.rawValue)), .init(.text("sig"), .bytes(signature))])
        }
        let format = options.attestation == .none ? "none" : "packed"
        let object = CBOREncoder.encode(
            .map([
                .init(.text("fmt"), .text(format)), .init(.text("attStmt"), statement), .init(.text("authData"), .bytes(authenticatorData)),
            ]))
        let id = Base64URL.encode(credential.id)
        return RegistrationCredential(
            id: id, rawId: id,
            response: .init(
                clientDataJSON: Base64URL.encode(clientDataJSON), attestationObject: Base64URL.encode(object),
                transports: options.transports))
    }

    /// Creates an assertion with `credential`, advancing its counter.
    public func assert(_ credential: inout SoftwareCredential, _ options: AssertionOptions) -> AssertionCredential {
        if let count = options.signCount {
            credential.signCount = count
        } else {
            credential.signCount += 1
        }
        let clientDataJSON = Self.clientData(
            type: options.clientDataType, challenge: options.challenge, origin: options.origin, crossOrigin: options.crossOrigin)
        let authenticatorData = Self.header(
            rpID: options.rpIDOverride ?? credential.rpID, flags: options.flags, signCount: credential.signCount)
        let signature = credential.sign(authenticatorData + Array(SHA256.hash(data: clientDataJSON)))
        let id = Base64URL.encode(credential.id)
        return AssertionCredential(
            id: id, rawId: id,
            response: .init(
                clientDataJSON: Base64URL.encode(clientDataJSON), authenticatorData: Base64URL.encode(authenticatorData),
                signature: Base64URL.encode(signature),
                userHandle: options.includeUserHandle ? Base64URL.encode(credential.userHandle) : nil))
    }

    /// rpIdHash | flags | signCount.
    static func header(rpID: String, flags: AuthenticatorFlags, signCount: UInt32) -> [UInt8] {
        Array(SHA256.hash(data: Array(rpID.utf8))) + [flags.rawValue]
            + [UInt8(signCount >> 24), UInt8(signCount >> 16 & 0xff), UInt8(signCount >> 8 & 0xff), UInt8(signCount & 0xff)]
    }

    /// clientDataJSON as browsers write it (type, challenge, origin, crossOrigin).
    static func clientData(type: String, challenge: [UInt8], origin: String, crossOrigin: Bool?) -> [UInt8] {
        var json = "{\"type\":\"\(type)\",\"challenge\":\"\(Base64URL.encode(challenge))\",\"origin\":\"\(origin)\""
        if let crossOrigin { json += ",\"crossOrigin\":\(crossOrigin)" }
        json += "}"
        return Array(json.utf8)
    }
}

extension RegistrationCredential {
    /// The JSON a client would send.
    public var json: [UInt8] { Array(try! JSONEncoder().encode(self)) }
}

extension AssertionCredential {
    /// The JSON a client would send.
    public var json: [UInt8] { Array(try! JSONEncoder().encode(self)) }
}
