/// Who may create an account, and how (docs/spec.md sections 1 and 2).
public enum RegistrationPosture: String, Codable, Hashable, Sendable, CaseIterable {
    /// An unknown email asking for a code gets a registration code (the default when none was chosen).
    case jitOnOtp = "JitOnOtp"
    /// No self-registration.
    case off = "Off"
    /// Only through POST /api/account/native/register.
    case explicitEndpoint = "ExplicitEndpoint"
}

/// Whether a registration field is asked for.
public enum FieldRequirement: String, Codable, Hashable, Sendable, CaseIterable {
    case off = "Off"
    case optional = "Optional"
    case required = "Required"
}

/// The registration form (Email is always required).
public struct RegistrationFields: Codable, Hashable, Sendable {
    public var username: FieldRequirement
    public var firstname: FieldRequirement
    public var lastname: FieldRequirement

    /// The guide's default (seed 001, "Required identity fields"): "the username is the email
    /// and names are optional", persisted on registration and ignored on login (issue 65; they
    /// were `Off` before, and realms recorded then keep the values they recorded).
    public init(username: FieldRequirement = .off, firstname: FieldRequirement = .optional, lastname: FieldRequirement = .optional) {
        self.username = username
        self.firstname = firstname
        self.lastname = lastname
    }

    /// Sets a field by its wire name (`Username`, `Firstname`, `Lastname`); false for any other
    /// name (`Email` is always required and not settable).
    public mutating func set(_ field: String, to requirement: FieldRequirement) -> Bool {
        switch field {
        case "Username": username = requirement
        case "Firstname": firstname = requirement
        case "Lastname": lastname = requirement
        default: return false
        }
        return true
    }
}
