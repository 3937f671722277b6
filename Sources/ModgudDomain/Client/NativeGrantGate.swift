/// Issue 65, build item 7: the native grants (`GrantType.native`) are given to a client only
/// while its realm's native-grants flag is on (docs/guides/ios-and-android.md, "Admin setup":
/// "They only appear in the grant picker once the realm flag in step 1 is on."). A client
/// that already holds them when the flag goes off keeps them, inert: the token endpoint
/// refuses the grants (`unsupported_grant_type`) until the flag is on again.
public enum NativeGrantGate {
    /// The refusal's stable code.
    public static let refusalCode = "Client.NativeGrantsDisabled"

    /// How an operator turns the flag on, in each tool (named in the refusal and on the
    /// console's grant picker).
    public static let howToEnable =
        "realm setting NativeGrants.Enabled: `modgud realm update <realm> --native-grants true`, "
        + #"admin API PATCH /admin/api/realms/{realm} {"NativeGrants":{"Enabled":true}}, or the console's realm page, "Native grants""#

    /// Refuses a change from `before` to `after` that gives the client a native grant it did
    /// not hold while `realm` has native grants off. Held ones may stay (they are inert).
    /// - Parameter before: the grants held so far (none for a new client).
    public static func check(before: Set<GrantType>, after: Set<GrantType>, realm: RealmSettings) throws(DomainError) {
        guard !realm.nativeGrants.enabled else { return }
        let added = after.intersection(GrantType.native).subtracting(before)
        guard !added.isEmpty else { return }
        throw DomainError(
            refusalCode,
            "The realm's native grants are off, so a client cannot be given \(added.sorted().map(\.rawValue).joined(separator: ", ")). "
                + "Turn them on first (\(howToEnable)).")
    }

    /// The native grants `client` holds that do nothing while `realm` has native grants off
    /// (sorted; empty when the flag is on or the client holds none).
    public static func inert(_ client: ClientSettings, realm: RealmSettings) -> [GrantType] {
        realm.nativeGrants.enabled ? [] : client.grants.intersection(GrantType.native).sorted()
    }
}
