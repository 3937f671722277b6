import EventSourcing
import Foundation
import JWTKit
import ModgudDomain
import PQ
import XCTest

@testable import ModgudService

/// Issue 30: the SET claims built from an outbox row (pure), and the events the catalog sends.
final class SecurityEventTokenTests: XCTestCase {
    let stream = SignalStreamRow(streamID: "s1", realm: "dev", clientID: "receiver", issuer: "https://login.example.com")
    let user: JWTHeaderField = .object(["format": .string("iss_sub"), "iss": .string("https://login.example.com"), "sub": .string("u1")])

    func testASessionRevokedSETNamesTheUserAndTheSessionAndHasNoSubOrExp() throws {
        let session = UUID()
        let row = SignalOutboxRow(
            seq: 42, jti: "j1", event: .sessionRevoked, userID: UUID(), sessionID: session, at: Date(timeIntervalSince1970: 1_800_000_000),
            detail: ["initiating_entity": .string("policy"), "reason_admin": .object(["en": .string("reuse")])])
        let claims = try XCTUnwrap(SecurityEventToken.claims(row, stream: stream, user: user))
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: JSONEncoder().encode(claims)) as? [String: Any])
        XCTAssertEqual(Set(json.keys), ["iss", "jti", "iat", "aud", "txn", "sub_id", "events"], "no sub, no exp (SSF 1.0 section 4)")
        XCTAssertEqual(json["aud"] as? String, "receiver")
        XCTAssertEqual(json["txn"] as? String, "42")
        let subject = try XCTUnwrap(json["sub_id"] as? [String: Any])
        XCTAssertEqual(subject["format"] as? String, "complex")
        XCTAssertEqual((subject["session"] as? [String: Any])?["id"] as? String, session.uuidString.lowercased())
        let event = try XCTUnwrap((json["events"] as? [String: Any])?[SignalEvent.sessionRevoked.uri] as? [String: Any])
        XCTAssertEqual(event["event_timestamp"] as? Int, 1_800_000_000)
    }

    func testCredentialChangeSettlesTheTypeAndProfileClaimsNeedAReceiverThatMaySeeThem() throws {
        let passkey = SignalOutboxRow(
            seq: 1, jti: "j", event: .credentialChange, userID: UUID(), at: Date(),
            detail: ["change_type": .string("delete"), "backupEligible": .bool(true), "aaguid": .string("AAAAAAAAAAAAAAAAAAAAAA")])
        let claims = try XCTUnwrap(SecurityEventToken.claims(passkey, stream: stream, user: user))
        guard case .object(let event)? = claims.events[SignalEvent.credentialChange.uri] else { return XCTFail("no event") }
        XCTAssertEqual(event["credential_type"], .string("fido2-platform"), "a synced passkey is a platform credential")
        XCTAssertNil(event["fido2_aaguid"], "the zero AAGUID names nothing")
        XCTAssertNil(event["backupEligible"])
        let profile = SignalOutboxRow(seq: 2, jti: "k", event: .tokenClaimsChange, userID: UUID(), at: Date(), detail: ["changed": .array([.string("given_name")])])
        XCTAssertNil(SecurityEventToken.claims(profile, stream: stream, user: user), "no profile claims: no SET")
        let sent = try XCTUnwrap(SecurityEventToken.claims(profile, stream: stream, user: user, profileClaims: ["given_name": .string("Ada")]))
        guard case .object(let change)? = sent.events[SignalEvent.tokenClaimsChange.uri] else { return XCTFail("no event") }
        XCTAssertEqual(change["claims"], .object(["given_name": .string("Ada")]))
    }

    func testEventsDeliveredAreTheSupportedOnesRequestedInOrder() {
        XCTAssertEqual(SignalEvent.delivered(requested: nil), SignalEvent.supported)
        let requested = [SignalEvent.accountPurged.uri, "urn:example:other", SignalEvent.sessionRevoked.uri, SignalEvent.verification.uri]
        XCTAssertEqual(SignalEvent.delivered(requested: requested), [.sessionRevoked, .accountPurged], "unknown URIs ignored; verification is not requested, it is sent")
        XCTAssertEqual(SignalEvent(uri: "https://schemas.openid.net/secevent/risc/event-type/account-disabled"), .accountDisabled)
    }

    func testAnAAGUIDIsAGUIDAndTheZeroAAGUIDIsNone() {
        let bytes: [UInt8] = [0xad, 0xce, 0x00, 0x02, 0x35, 0xbc, 0xc6, 0x0a, 0x64, 0x8b, 0x0b, 0x25, 0xf1, 0xf0, 0x55, 0x03]
        let encoded = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        XCTAssertEqual(SecurityEventToken.guid(base64URL: encoded), "adce0002-35bc-c60a-648b-0b25f1f05503")
        XCTAssertNil(SecurityEventToken.guid(base64URL: "AAAAAAAAAAAAAAAAAAAAAA"))
        XCTAssertNil(SecurityEventToken.guid(base64URL: "AAAA"))
    }

    func testTheCatalogMapsRevocationsAndCredentialsWithoutPersonalData() throws {
        let family = UUID()
        let revoked = try envelope(
            StreamRef(type: TokenFamily.streamType, key: family.uuidString.lowercased(), realm: "dev"), TokenFamilyRevoked(reason: .reuse))
        let fact = try XCTUnwrap(try SignalCatalog.fact(for: revoked))
        XCTAssertEqual(fact.event, .sessionRevoked)
        XCTAssertEqual(fact.session, family)
        XCTAssertEqual(fact.detail["initiating_entity"], .string("policy"))
        let user = UUID()
        let rename = try envelope(
            StreamRef(type: Passkey.streamType, key: UUID().uuidString.lowercased(), realm: "dev"),
            PasskeyRenamed(displayName: .plain("Ada's phone"), by: "user:\(user.uuidString.lowercased())"))
        let renamed = try XCTUnwrap(try SignalCatalog.fact(for: rename))
        XCTAssertEqual(renamed.detail["change_type"], .string("update"))
        XCTAssertTrue(renamed.passkeyFacts)
        XCTAssertFalse("\(renamed.detail)".contains("Ada"), "a passkey's name never reaches a SET")
        let used = try envelope(StreamRef(type: Passkey.streamType, key: UUID().uuidString.lowercased(), realm: "dev"), PasskeyUsed(signCount: 1, backedUp: true, usedAt: Date()))
        XCTAssertNil(try SignalCatalog.fact(for: used), "a sign-in is not a security event here")
    }

    func envelope(_ stream: StreamRef, _ event: some DomainEvent) throws -> EventEnvelope {
        let new = try NewEvent(event)
        return EventEnvelope(stream: stream, streamVersion: 2, type: new.type, revision: 1, payload: new.payload, metadata: EventMetadata(actor: "user:x"))
    }
}
