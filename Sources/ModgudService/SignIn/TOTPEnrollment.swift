import EventSourcing
import Foundation
import ModgudDomain

/// Turning TOTP on for a user (issue 5): self-service through the account endpoint (a
/// secret and its otpauth:// URI, then one valid code to confirm), or by an operator.
/// The secret is sealed under the master key before it reaches an event.
public struct TOTPEnrollment: Sendable {
    let userActors: AggregateRegistry<User>
    let secrets: ServerSecrets
    /// Opens the address that labels the authenticator entry.
    let vault: PersonalDataVault?
    let now: @Sendable () -> Date

    public init(users: AggregateRegistry<User>, secrets: ServerSecrets, vault: PersonalDataVault?, now: @escaping @Sendable () -> Date) {
        self.vault = vault
        self.userActors = users
        self.secrets = secrets
        self.now = now
    }

    /// What an authenticator app needs.
    public struct Provisioning: Sendable, Equatable {
        /// `otpauth://totp/...` (show it as a QR code).
        public var uri: String
        /// The same secret in base32, for typing in.
        public var secret: String
    }

    /// Step 1: a new secret, pending until confirmed. Starting again replaces the pending one.
    /// - Throws: `ServiceRefusal` (conflict) when the user's state refuses it (TOTP on already).
    public func begin(realm: String, userID: UUID, issuer: String, metadata: EventMetadata) async throws -> Provisioning {
        let actor = await userActors.actor(for: StreamNames.user(realm: realm, userID: userID))
        let user = try await actor.current().state
        let secret = TOTP.generateSecret()
        let sealed = try secrets.sealTOTPSecret(secret, realm: realm, userID: userID)
        do {
            _ = try await actor.execute(.beginTOTPEnrollment(encryptedSecret: sealed), now: now(), metadata: metadata)
        } catch let refused as DomainError {
            throw ServiceRefusal(.conflict, refused.code, refused.message)
        }
        let totp = TOTP(secret: secret)
        return Provisioning(uri: totp.provisioningURI(issuer: issuer, account: try await vault.profile(of: user).email ?? userID.uuidString), secret: Base32.encode(secret))
    }

    /// Step 2: a valid code from the pending secret turns TOTP on (and spends that step).
    /// - Throws: `ServiceRefusal` invalid `TOTP.InvalidCode`; conflict `TOTP.NoEnrollment`,
    ///   `TOTP.AlreadyEnabled`, or a refusal of the user's state meanwhile.
    public func confirm(realm: String, userID: UUID, code: String, metadata: EventMetadata) async throws {
        let actor = await userActors.actor(for: StreamNames.user(realm: realm, userID: userID))
        let user = try await actor.current().state
        guard user.encryptedTOTPSecret == nil else { throw ServiceRefusal(.conflict, "TOTP.AlreadyEnabled", "Two-factor is already on.") }
        guard let pending = user.pendingTOTPSecret else {
            throw ServiceRefusal(.conflict, "TOTP.NoEnrollment", "Start the two-factor enrollment first.")
        }
        let secret = try secrets.openTOTPSecret(pending, realm: realm, userID: userID)
        guard let step = TOTP(secret: secret).match(code, at: now()) else {
            throw ServiceRefusal.invalid("TOTP.InvalidCode", "The two-factor code is invalid.")
        }
        do {
            _ = try await actor.execute(.confirmTOTPEnrollment(step: step), now: now(), metadata: metadata)
        } catch let refused as DomainError {
            throw ServiceRefusal(refused.code == "TOTP.InvalidCode" ? .invalid : .conflict, refused.code, refused.message)
        }
    }

    /// Operator path: TOTP on at once with a new secret; the provisioning goes to the user
    /// out of band.
    public func enableDirectly(realm: String, userID: UUID, issuer: String, metadata: EventMetadata) async throws -> Provisioning {
        let actor = await userActors.actor(for: StreamNames.user(realm: realm, userID: userID))
        let user = try await actor.current().state
        let secret = TOTP.generateSecret()
        _ = try await actor.execute(
            .enableTOTP(encryptedSecret: try secrets.sealTOTPSecret(secret, realm: realm, userID: userID)), now: now(), metadata: metadata)
        return Provisioning(
            uri: TOTP(secret: secret).provisioningURI(issuer: issuer, account: try await vault.profile(of: user).email ?? userID.uuidString),
            secret: Base32.encode(secret))
    }

    public func disable(realm: String, userID: UUID, metadata: EventMetadata) async throws {
        _ = try await userActors.actor(for: StreamNames.user(realm: realm, userID: userID)).execute(.disableTOTP, now: now(), metadata: metadata)
    }
}
