/// OpenID Connect Native SSO for Mobile Apps (draft 07; issue 69): a vendor's apps that share
/// one sign-in on a device. A client in a team may ask for the `device_sso` scope at sign-in
/// (the token response then carries a `device_secret`), and may exchange a teammate's ID token
/// and that device secret for its own tokens (section 4) without a new sign-in. A client is in
/// at most one team; a client in none gets no device secret and is refused at the exchange.
public struct NativeSSOTeam: Codable, Hashable, Sendable {
    /// The team's name (1 to 64 letters, digits, `-`, `_` or `.`): the device session records it.
    public var name: String
    /// The client ids of the vendor's apps (1 to 100).
    public var clients: [String]

    public init(name: String, clients: [String]) {
        self.name = name
        self.clients = clients
    }

    /// Checks a realm's teams: names well formed and unique, each client in at most one team.
    static func validate(_ teams: [NativeSSOTeam]) throws(DomainError) {
        guard Set(teams.map(\.name)).count == teams.count else { throw DomainError("NativeSSO.DuplicateTeam", "Two Native SSO teams have the same name.") }
        var seen: Set<String> = []
        for team in teams {
            guard !team.name.isEmpty, team.name.count <= 64, team.name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
                throw DomainError("NativeSSO.InvalidTeamName", "\(team.name) is not a team name (1 to 64 letters, digits, '-', '_' or '.').")
            }
            guard !team.clients.isEmpty, team.clients.count <= 100 else {
                throw DomainError("NativeSSO.InvalidTeam", "The Native SSO team \(team.name) needs 1 to 100 clients.")
            }
            for client in team.clients {
                guard seen.insert(client).inserted else {
                    throw DomainError("NativeSSO.ClientInTwoTeams", "The client \(client) is in two Native SSO teams (or twice in one).")
                }
            }
        }
    }
}
