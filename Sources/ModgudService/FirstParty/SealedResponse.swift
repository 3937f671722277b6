import Foundation

/// A token response as sealed inside an authorization code's row.
struct SealedResponse: Codable {
    /// The session that issued the code (absent in codes issued before sessions had streams).
    var sessionID: UUID?
    /// The person signed in, for the re-authorization session of the answer.
    var userID: UUID?
    /// The sign-in (token family), revoked if the code is presented again.
    var familyID: UUID?
    var accessToken: String
    var tokenType: String
    var expiresIn: Int
    var refreshToken: String?
    var scope: String
    var idToken: String?
    /// Issue 46: the code's or link's hint that an automatic passkey upgrade may follow.
    var passkeyUpgrade: Bool?
    /// Native SSO (issue 69): the device secret of a sign-in granted `device_sso`, sealed like
    /// the tokens beside it.
    var deviceSecret: String?

    init(_ response: TokenResponse, sessionID: UUID) {
        self.sessionID = sessionID
        userID = response.signIn?.userID
        familyID = response.signIn?.familyID
        accessToken = response.accessToken
        tokenType = response.tokenType
        expiresIn = response.expiresIn
        refreshToken = response.refreshToken
        scope = response.scope
        idToken = response.idToken
        passkeyUpgrade = response.passkeyUpgrade
        deviceSecret = response.deviceSecret
    }

    var response: TokenResponse {
        var response = TokenResponse(
            accessToken: accessToken, tokenType: tokenType, expiresIn: expiresIn, refreshToken: refreshToken, scope: scope, idToken: idToken)
        response.passkeyUpgrade = passkeyUpgrade
        response.deviceSecret = deviceSecret
        return response
    }
}
