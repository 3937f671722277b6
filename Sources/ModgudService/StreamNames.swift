import Crypto
import EventSourcing
import Foundation
import ModgudDomain

/// How aggregates map to streams. Every stream carries its realm.
public enum StreamNames {
    public static func realm(_ realmID: String) -> StreamRef {
        StreamRef(type: Realm.streamType, key: realmID, realm: realmID)
    }

    /// Client ids are unique per realm, so the key is `realm/client`.
    public static func client(realm: String, clientID: String) -> StreamRef {
        StreamRef(type: Client.streamType, key: "\(realm)/\(clientID)", realm: realm)
    }

    public static func user(realm: String, userID: UUID) -> StreamRef {
        StreamRef(type: User.streamType, key: userID.uuidString.lowercased(), realm: realm)
    }

    public static func tokenFamily(realm: String, familyID: UUID) -> StreamRef {
        StreamRef(type: TokenFamily.streamType, key: familyID.uuidString.lowercased(), realm: realm)
    }

    /// The sign-in and registration codes of one address on one UTC day: one stream, so the
    /// cooldown and "a new code voids the old" hold across both purposes. Keyed by
    /// `PersonalDataVault.codeStreamKey` (a keyed hash of the address and the day: no address,
    /// and no link between days).
    public static func emailCodes(realm: String, key: String) -> StreamRef {
        StreamRef(type: EmailChallenge.streamType, key: "code.\(key)", realm: realm)
    }

    /// The magic links of one user.
    public static func magicLinks(realm: String, userID: UUID) -> StreamRef {
        StreamRef(type: EmailChallenge.streamType, key: "magic.\(userID.uuidString.lowercased())", realm: realm)
    }

    /// The address-confirmation codes of one user (issue 14).
    public static func emailConfirmation(realm: String, userID: UUID) -> StreamRef {
        StreamRef(type: EmailChallenge.streamType, key: "confirm.\(userID.uuidString.lowercased())", realm: realm)
    }

    /// A device authorization (RFC 8628, issue 69).
    public static func deviceAuthorization(realm: String, authorizationID: UUID) -> StreamRef {
        StreamRef(type: DeviceAuthorization.streamType, key: authorizationID.uuidString.lowercased(), realm: realm)
    }

    public static func passkeyCeremony(realm: String, ceremonyID: UUID) -> StreamRef {
        StreamRef(type: PasskeyCeremony.streamType, key: ceremonyID.uuidString.lowercased(), realm: realm)
    }

    /// A first-party `auth_session` (issue 45), keyed by its id (not by its token).
    public static func authorizationSession(realm: String, sessionID: UUID) -> StreamRef {
        StreamRef(type: AuthorizationSession.streamType, key: sessionID.uuidString.lowercased(), realm: realm)
    }

    /// A passkey, keyed by its management id.
    public static func passkey(realm: String, passkeyID: UUID) -> StreamRef {
        StreamRef(type: Passkey.streamType, key: passkeyID.uuidString.lowercased(), realm: realm)
    }

    /// A receiver client's Shared Signals stream (one per client), keyed like the client.
    public static func signalStream(realm: String, clientID: String) -> StreamRef {
        StreamRef(type: SignalStream.streamType, key: "\(realm)/\(clientID)", realm: realm)
    }

    /// An operator's console actions (issue 31), in the operator realm.
    public static func operatorLog(realm: String, userID: UUID) -> StreamRef {
        StreamRef(type: OperatorLog.streamType, key: userID.uuidString.lowercased(), realm: realm)
    }

    /// The trips of one rate-limit bucket on one UTC day: `bucket` is the bucket's stored key
    /// (a keyed hash: no address), `day` is `yyyy-MM-dd`.
    public static func rateLimitLog(realm: String, policy: String, bucket: String, day: String) -> StreamRef {
        StreamRef(type: RateLimitLog.streamType, key: "\(policy).\(bucket).\(day)", realm: realm)
    }

    /// The key part of a stream id (`user-<key>` → `<key>`).
    static func key(of stream: StreamRef) -> String {
        String(stream.id.dropFirst(stream.type.count + 1))
    }

    static func clientID(of stream: StreamRef) -> String {
        String(key(of: stream).dropFirst(stream.realm.count + 1))
    }

    static func uuid(of stream: StreamRef) -> UUID? {
        UUID(uuidString: key(of: stream))
    }
}
