import Foundation
import ModgudDomain

/// A user's personal fields opened for one use (claims in an ID token, userinfo, the admin
/// API): never stored, never logged. An erased user's fields are all nil.
public struct UserProfile: Sendable, Equatable {
    public var email: String?
    public var emailConfirmed: Bool
    public var username: String?
    public var firstName: String?
    public var lastName: String?

    public init(email: String?, emailConfirmed: Bool, username: String? = nil, firstName: String? = nil, lastName: String? = nil) {
        self.email = email
        self.emailConfirmed = emailConfirmed
        self.username = username
        self.firstName = firstName
        self.lastName = lastName
    }

    /// The first and last name joined (empty when neither is known).
    public var displayName: String { [firstName, lastName].compactMap { $0 }.joined(separator: " ") }
}

extension PersonalDataVault {
    /// Opens a user's personal fields (legacy plaintext as it is).
    public func profile(of user: User.State) async throws -> UserProfile {
        UserProfile(
            email: try await open(user.email), emailConfirmed: user.emailConfirmed, username: try await open(user.username),
            firstName: try await open(user.firstName), lastName: try await open(user.lastName))
    }
}

extension Optional where Wrapped == PersonalDataVault {
    /// As `PersonalDataVault.profile(of:)`; without a vault (a tool started without the master
    /// key) only legacy plaintext opens.
    public func profile(of user: User.State) async throws -> UserProfile {
        if let vault = self { return try await vault.profile(of: user) }
        func plain(_ text: PersonalText?) -> String? { if case .plain(let value) = text { value } else { nil } }
        return UserProfile(
            email: plain(user.email), emailConfirmed: user.emailConfirmed, username: plain(user.username), firstName: plain(user.firstName),
            lastName: plain(user.lastName))
    }
}
