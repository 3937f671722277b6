import EventStorePostgres
import Foundation
import Logging

/// One instance's periodic pruning (`modgud serve`'s maintenance loop): drained rate-limit
/// buckets (a bucket whose time has passed holds nothing; deleting it changes no decision),
/// spent DPoP `jti`s, idle console sessions, expired `auth_session`s, authorization codes and device authorizations, one-shot streams past their retention, the day
/// keys of client IPs past theirs, the keys of registrations never completed, and token rows
/// no request can use any more (`TokenTables.prune`). Every
/// instance runs it; each delete is idempotent and skips rows another instance holds. A
/// database error is logged and the next step runs.
public struct Housekeeping: Sendable {
    let rateLimiter: RateLimiter
    let dpop: DPoPVerifier?
    let console: OperatorConsole
    let retention: LogRetention
    /// Personal data keys; nil in tools started without the master key.
    let vault: PersonalDataVault?
    /// How long client IPs in event metadata stay readable (their day keys are shredded after).
    let addressRetention: Duration
    /// Expired `auth_session`s and authorization codes (issue 45).
    let firstParty: FirstPartyAuthorization
    /// Expired access tokens and the refresh tokens of ended families (issue 70).
    let tokens: TokenTables
    let now: @Sendable () -> Date

    /// Runs every step once.
    public func prune(logger: Logger) async {
        do {
            try await rateLimiter.prune()
            try await dpop?.prune(now: now())
            _ = try await console.pruneSessions()
            try await firstParty.prune()
            try await DeviceAuthorizationsTable.prune(before: now(), pool: firstParty.pool)
        } catch {
            logger.warning("rate-limit, DPoP jti, console session or first-party session pruning failed", metadata: ["error": "\(error)"])
        }
        do {
            let pruned = try await tokens.prune(now: now())
            if pruned.accessTokens + pruned.refreshTokens > 0 {
                logger.info(
                    "pruned token rows no request can use",
                    metadata: ["access_tokens": "\(pruned.accessTokens)", "refresh_tokens": "\(pruned.refreshTokens)"])
            }
        } catch {
            logger.warning("token pruning failed", metadata: ["error": "\(error)"])
        }
        do {
            let report = try await retention.prune()
            if report.streams > 0 {
                logger.info("pruned one-shot streams", metadata: ["streams": "\(report.streams)", "events": "\(report.events)"])
            }
        } catch {
            logger.warning("log retention failed", metadata: ["error": "\(error)"])
        }
        do {
            let cutoff = now().addingTimeInterval(-Double(addressRetention.components.seconds))
            if let shredded = try await vault?.shredAddresses(before: cutoff), shredded > 0 {
                logger.info("client IPs past their retention made unreadable", metadata: ["days": "\(shredded)"])
            }
        } catch {
            logger.warning("client IP retention failed", metadata: ["error": "\(error)"])
        }
        do {
            if let shredded = try await vault?.shredAbandoned(before: now().addingTimeInterval(-PersonalDataVault.abandonedAfter)), shredded > 0 {
                logger.info("keys of registrations never completed shredded", metadata: ["keys": "\(shredded)"])
            }
        } catch {
            logger.warning("abandoned registration cleanup failed", metadata: ["error": "\(error)"])
        }
    }
}
