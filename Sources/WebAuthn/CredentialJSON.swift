import Foundation

/// A registration as the client sends it: PublicKeyCredential.toJSON() of create() (WebAuthn L3 section 5.1.8).
public struct RegistrationCredential: ClientCredentialJSON {
    public struct Response: Sendable, Codable {
        public var clientDataJSON: String
        public var attestationObject: String
        public var transports: [String]?

        public init(clientDataJSON: String, attestationObject: String, transports: [String]? = nil) {
            self.clientDataJSON = clientDataJSON
            self.attestationObject = attestationObject
            self.transports = transports
        }
    }

    public var id: String
    public var rawId: String
    public var type: String
    public var response: Response
    public var authenticatorAttachment: String?
    /// Some clients put transports beside the response.
    public var transports: [String]?

    public init(id: String, rawId: String, type: String = "public-key", response: Response) {
        self.id = id
        self.rawId = rawId
        self.type = type
        self.response = response
    }
}

/// A sign-in as the client sends it: PublicKeyCredential.toJSON() of get().
public struct AssertionCredential: ClientCredentialJSON {
    public struct Response: Sendable, Codable {
        public var clientDataJSON: String
        public var authenticatorData: String
        public var signature: String
        public var userHandle: String?

        public init(clientDataJSON: String, authenticatorData: String, signature: String, userHandle: String?) {
            self.clientDataJSON = clientDataJSON
            self.authenticatorData = authenticatorData
            self.signature = signature
            self.userHandle = userHandle
        }
    }

    public var id: String
    public var rawId: String
    public var type: String
    public var response: Response

    public init(id: String, rawId: String, type: String = "public-key", response: Response) {
        self.id = id
        self.rawId = rawId
        self.type = type
        self.response = response
    }
}

/// A credential in the JSON form clients send (PublicKeyCredential.toJSON()).
public protocol ClientCredentialJSON: Sendable, Codable {}

extension ClientCredentialJSON {
    /// Parses the JSON a client sent.
    /// - Throws: `WebAuthnError.malformedCredential` naming the missing or mistyped member.
    public init(json: [UInt8]) throws(WebAuthnError) {
        do {
            self = try JSONDecoder().decode(Self.self, from: Data(json))
        } catch {
            throw .malformedCredential(CredentialJSONError.describe(error))
        }
    }
}

enum CredentialJSONError {
    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): return "member \(key.stringValue) is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "member \(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        default: return "not a JSON object"
        }
    }
}

/// Decodes a base64url member or throws naming it.
func base64Member(_ text: String, _ field: String) throws(WebAuthnError) -> [UInt8] {
    guard let bytes = Base64URL.decode(text) else { throw .malformedBase64(field: field) }
    return bytes
}
