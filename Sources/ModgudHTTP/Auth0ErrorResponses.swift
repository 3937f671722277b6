import Foundation
import Hummingbird
import ModgudService

/// Errors on Auth0's paths as Auth0 words and shapes them (issue 41), so the checks of Auth0's
/// SDKs hold: Auth0.swift's `AuthenticationError` and Auth0.Android's `AuthenticationException`
/// read `error` and `error_description` and test `isInvalidCredentials` and
/// `isInvalidRefreshToken` by exact texts; auth0-python's `RateLimitError.reset_at` reads
/// `X-RateLimit-Reset`. My Account answers RFC 7807 problems (`MyAccountError` reads `type`,
/// `title`, `detail`). Modgud's own paths keep Modgud's texts and bodies.
enum Auth0ErrorResponses {
    /// Auth0's text for a refused passwordless code (`isInvalidCredentials` in Auth0.swift
    /// `AuthenticationError.swift` and Auth0.Android `AuthenticationException.kt`).
    static let wrongCode = "Wrong email or verification code."
    /// Auth0's text for an unusable refresh token (`isInvalidRefreshToken` in both SDKs).
    static let invalidRefreshToken = "Unknown or invalid refresh token."
    /// Auth0's 429 description on its Authentication API.
    static let tooManyRequests = "Too many requests. Check the X-RateLimit-* headers."

    /// The edge of Auth0's Authentication API paths: every failure in Auth0's OAuth shape,
    /// `{error, error_description}`: OAuth errors, service refusals, Auth0's 429, the
    /// request's own parsing answers, and 500/503 (`server_error`, `temporarily_unavailable`),
    /// never a problem document an Auth0 SDK cannot read.
    static func respond(_ context: ModgudRequestContext, endpoint: String, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch let error as OAuthError {
            return OAuthResponses.error(error)
        } catch let refusal as ServiceRefusal {
            return refusal.oauthResponse
        } catch let limited as RateLimited {
            return rateLimited(limited)
        } catch {
            return ServerFailure.oauth(error, context: context, endpoint: endpoint)
        }
    }

    /// An OAuth error as Auth0 words it: the same code, Auth0's text where its SDKs test one.
    static func worded(_ error: OAuthError, grantType: String?) -> OAuthError {
        guard error.code == .invalidGrant else { return error }
        if grantType == Auth0Compatibility.passwordlessOTPGrant, error == EmailSignInService.invalidCode {
            return OAuthError("invalid_grant", wrongCode)
        }
        if grantType == "refresh_token", error == TokenService.invalidRefreshToken {
            return OAuthError("invalid_grant", invalidRefreshToken)
        }
        return error
    }

    /// 429 `too_many_requests` with Auth0's rate-limit headers: `X-RateLimit-Limit`,
    /// `X-RateLimit-Remaining` (0) and `X-RateLimit-Reset` (Unix seconds), and `Retry-After`.
    static func rateLimited(_ limited: RateLimited, now: Date = Date()) -> Response {
        var response = OAuthResponses.json(
            OAuthResponses.ErrorBody(error: "too_many_requests", errorDescription: tooManyRequests), status: .tooManyRequests)
        addRateLimitHeaders(&response, limited, now: now)
        return response
    }

    /// My Account's 429: a problem, with the same headers.
    static func myAccountRateLimited(_ limited: RateLimited, now: Date = Date()) -> Response {
        var response = Problem.response("too_many_requests", status: 429, detail: tooManyRequests)
        addRateLimitHeaders(&response, limited, now: now)
        return response
    }

    /// A bearer challenge (401 or 403, RFC 6750 section 3) given My Account's problem body:
    /// its `title` is the challenge's error code (`invalid_token`, `insufficient_scope`).
    static func myAccountChallenge(_ response: Response) -> Response {
        let challenge = response.headers[values: .wwwAuthenticate].first ?? ""
        let code = challenge.firstMatch(of: /error="([a-z_]+)"/).map { String($0.1) } ?? "invalid_token"
        let detail =
            switch code {
            case "insufficient_scope": "The access token lacks the scope this operation needs."
            case "invalid_token": "The access token is not valid for the My Account API."
            default: "An access token for the My Account API is required."
            }
        var answer = Problem.response(code, status: Int(response.status.code), detail: detail)
        for field in response.headers where field.name == .wwwAuthenticate { answer.headers.append(field) }
        return answer
    }

    private static func addRateLimitHeaders(_ response: inout Response, _ limited: RateLimited, now: Date) {
        response.headers[.retryAfter] = String(limited.retryAfterSeconds)
        response.headers[.rateLimitLimit] = String(limited.limit)
        response.headers[.rateLimitRemaining] = "0"
        response.headers[.rateLimitReset] = String(Int(now.timeIntervalSince1970.rounded(.up)) + limited.retryAfterSeconds)
    }
}
