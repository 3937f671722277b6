import EventSourcing
import Foundation
import ModgudDomain

/// One Authorization Challenge request's parameters (draft-ietf-oauth-first-party-apps section
/// 5.1, with Modgud's factor members), as the HTTP adapter parsed them from the form.
public struct FirstPartyRequest: Sendable {
    public var responseType: String?
    public var codeChallenge: String?
    public var codeChallengeMethod: String?
    public var maxAge: String?
    public var nonce: String?
    public var scope: String?
    public var resources: [String] = []
    /// The address to sign in (`login_hint`); without it, a passkey.
    public var loginHint: String?
    public var recoveryCode: String?
    /// `email_delivery`: `code` (the default) or `link`.
    public var emailDelivery: String?
    public var prompt: String?
    public var givenName: String?
    public var familyName: String?
    public var authSession: String?
    public var emailCode: String?
    /// A magic link's `userId` and `token`, as `user_id` and `magic_token`.
    public var userID: String?
    public var magicToken: String?
    public var passkeyAssertion: String?
    public var totpCode: String?

    public init() {}

    var names: (given: String?, family: String?) { (givenName, familyName) }

    var link: FirstPartyAuthorization.SessionState.HeldLink? {
        guard let userID, let magicToken else { return nil }
        return .init(userID: userID, token: magicToken)
    }
}

/// What one request carries after the endpoint's gates: the authenticated (and attested)
/// client, the realm, the verified DPoP key and when the request began (for the jitter).
public struct FirstPartyCall: Sendable {
    public var client: AuthenticatedClient
    public var realm: RealmDirectory.Entry
    public var issuer: String
    /// The request's source key (rate limits).
    public var source: String
    /// The thumbprint of the request's DPoP key.
    public var jkt: String?
    public var metadata: EventMetadata
    public var started: ContinuousClock.Instant

    public init(
        client: AuthenticatedClient, realm: RealmDirectory.Entry, issuer: String, source: String, jkt: String?, metadata: EventMetadata,
        started: ContinuousClock.Instant
    ) {
        self.client = client
        self.realm = realm
        self.issuer = issuer
        self.source = source
        self.jkt = jkt
        self.metadata = metadata
        self.started = started
    }

    /// What a code, link or ceremony this request starts is bound to (issue 65): the client and
    /// its attested instance.
    var binding: FlowBinding { FlowBinding(clientID: client.id, attestedKey: client.attestation?.jkt) }

    var realmID: String { realm.realmID }

    /// A user grant's request for the factor this call redeems.
    func grant(scope: String?, resources: [String], totpCode: String?) -> UserGrantRequest {
        UserGrantRequest(client: client, scope: scope, resources: resources, totpCode: totpCode, issuer: issuer, metadata: metadata, dpopKey: jkt)
    }
}
