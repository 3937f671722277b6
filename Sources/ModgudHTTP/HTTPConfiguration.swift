import ModgudService
import Prometheus

/// How the HTTP adapter presents itself.
public struct HTTPConfiguration: Sendable {
    /// Scheme of the issuer URL (`https` in production; `http` for `modgud dev` on localhost).
    public var issuerScheme: String
    /// Largest request body accepted; larger ones get 413.
    public var maxBodyBytes: Int
    /// The bootstrap admin token (`MODGUD_ADMIN_TOKEN`); nil: only realm tokens with scope `modgud:admin`.
    public var adminToken: String?
    /// Proxies whose `X-Forwarded-For` is believed (exact addresses); empty: the header is ignored.
    public var trustedProxies: Set<String>
    /// The delay of the anti-enumeration answers (docs/spec.md section 0).
    public var jitter: ResponseJitter
    /// Connection deadlines and the connection cap.
    public var limits: ServerLimits
    /// The registry `GET /metrics` renders (the one bootstrapped into swift-metrics); nil: no `/metrics`.
    public var metrics: PrometheusCollectorRegistry?
    /// How long an empty Shared Signals poll without `returnImmediately` waits (RFC 8936
    /// section 2.4.3). A drain ends the wait early.
    public var signalLongPoll: Duration = .seconds(20)

    public init(
        issuerScheme: String = "https", maxBodyBytes: Int = 64 * 1024, adminToken: String? = nil, trustedProxies: Set<String> = [],
        jitter: ResponseJitter = ResponseJitter(), limits: ServerLimits = ServerLimits(), metrics: PrometheusCollectorRegistry? = nil
    ) {
        self.limits = limits
        self.metrics = metrics
        self.issuerScheme = issuerScheme
        self.maxBodyBytes = maxBodyBytes
        self.adminToken = adminToken
        self.trustedProxies = trustedProxies
        self.jitter = jitter
    }
}
