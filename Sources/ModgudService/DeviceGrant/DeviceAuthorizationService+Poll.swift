import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain

/// The device's poll (RFC 8628 section 3.4) and its answers (section 3.5).
extension DeviceAuthorizationService {
    /// Section 3.5's error codes.
    public static func pending() -> OAuthError {
        OAuthError("authorization_pending", "The person has not approved the device yet: poll again after the interval.")
    }

    public static func slowDown(interval: Int) -> OAuthError {
        OAuthError("slow_down", "Polling too fast: poll every \(interval) seconds from now on.")
    }

    public static let denied = OAuthError("access_denied", "The person denied the device's request.")
    public static let expired = OAuthError("expired_token", "The device code expired: ask for a new one.")
    public static let invalidDeviceCode = OAuthError.invalidGrant("The device code is invalid or was used.")

    /// grant_type=urn:ietf:params:oauth:grant-type:device_code: the tokens once the person
    /// approved, once; otherwise section 3.5's answer. A poll sooner than the interval after
    /// the last one is `slow_down`, and the interval grows by 5 seconds for good.
    public func poll(client: AuthenticatedClient, deviceCode: String, _ grant: UserGrantRequest) async throws -> TokenResponse {
        guard client.settings.grants.contains(.deviceCode) else {
            throw OAuthError.unauthorizedClient("The client may not use grant_type \(GrantType.deviceCode.rawValue).")
        }
        guard let (id, secretHash) = Self.parse(deviceCode: deviceCode) else { throw Self.invalidDeviceCode }
        let time = now()
        let pace = try await DeviceAuthorizationsTable.pace(realm: client.realm, authorizationID: id, clientID: client.id, now: time, pool: pool)
        guard pace != .unknown else { throw Self.invalidDeviceCode }
        let actor = await authorizations.actor(for: StreamNames.deviceAuthorization(realm: client.realm, authorizationID: id))
        let (state, version) = try await actor.current()
        switch state.status(clientID: client.id, secretHash: secretHash, at: time) {
        case .pending:
            if case .slowDown(let interval) = pace { throw Self.slowDown(interval: interval) }
            throw Self.pending()
        case .denied: throw Self.denied
        case .expired: throw Self.expired
        case .unknown, .redeemed: throw Self.invalidDeviceCode
        case .approved:
            return try await redeem(state, version: version, actor: actor, client: client, secretHash: secretHash, grant)
        }
    }

    /// Signs the approver in on the device: the family starts in the append that redeems the
    /// authorization at the version this instance read, so two polls get one set of tokens.
    private func redeem(
        _ state: DeviceAuthorization.State, version: Int64, actor: AggregateActor<DeviceAuthorization>, client: AuthenticatedClient,
        secretHash: String, _ grant: UserGrantRequest
    ) async throws -> TokenResponse {
        guard let requested = state.requested, let approved = state.approved else { throw Self.invalidDeviceCode }
        let loaded = try await users.actor(for: StreamNames.user(realm: client.realm, userID: approved.userID)).current()
        // The approval is the sign-in: its time and methods are the tokens' auth_time and amr,
        // and the scopes and resources are the device's request's.
        var request = grant
        (request.scope, request.resources) = (requested.scopes.joined(separator: " "), requested.resources)
        let factor = SignInFactor.deviceApproval(amr: approved.amr, at: approved.authTime)
        let signIn = try await pipeline.prepareOpen(factor, try pipeline.gate(factor, user: loaded.state, version: loaded.version, grant: request), request)
        do {
            _ = try await actor.execute(
                .redeem(clientID: client.id, secretHash: secretHash, familyID: signIn.started.familyID), now: now(), metadata: grant.metadata,
                onlyAtVersion: version, alsoAppending: { _ in [try signIn.write()] })
        } catch is DomainError {
            throw Self.invalidDeviceCode
        } catch is AggregateChangedMeanwhile {
            throw Self.invalidDeviceCode
        } catch EventStoreError.wrongExpectedVersion {
            throw Self.invalidDeviceCode
        }
        return signIn.response
    }
}
