import NIOCore
import NIOHTTPTypes

/// Closes a connection whose client is too slow, so slow or stalled clients cannot hold
/// sockets and memory open (slowloris). Three deadlines, one armed at a time:
///
/// - *header*: from the connection's start until the first request's head (request line and
///   every header) has been read;
/// - *body*: from a request's head until its last body byte;
/// - *idle*: from the end of a response until the next request's head has been read (the
///   keep-alive idle time; a client slowly sending its next head counts against it).
///
/// While a request is being handled no deadline runs: the server's own time is not the
/// client's fault. On expiry the connection is closed without an answer (as nginx does for
/// `client_header_timeout`); the request, if any had started, was never handled.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limits: ServerLimits
    /// When the connection is closed unless disarmed first; nil while nothing is armed.
    private var expiresAt: NIODeadline?
    /// The one timer: it checks `expiresAt` when it fires and follows it if it moved later.
    private var timer: Scheduled<Void>?
    private var timerFiresAt: NIODeadline?
    /// Requests read whole and not yet answered.
    private var inFlight = 0
    /// A request's head has arrived and its end has not (its body deadline runs, even if the
    /// server has already answered, say with a 404, while the client is still sending).
    private var reading = false

    init(limits: ServerLimits) {
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context, limits.headerTimeout) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context, limits.headerTimeout)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopTimer()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimer()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            reading = true
            arm(context, limits.bodyTimeout)
        case .body: break
        case .end:
            reading = false
            inFlight += 1
            disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            inFlight = max(0, inFlight - 1)
            if inFlight == 0 && !reading { arm(context, limits.idleTimeout) }
        }
        context.write(data, promise: promise)
    }

    /// Sets the deadline. A timer is scheduled only when none would fire by then: in steady
    /// keep-alive traffic a request schedules nothing (issue 27: two timers scheduled and
    /// cancelled per request cost 4% of a static document's CPU).
    private func arm(_ context: ChannelHandlerContext, _ timeout: Duration) {
        let at = NIODeadline.now() + TimeAmount(timeout)
        expiresAt = at
        if let firesAt = timerFiresAt, firesAt <= at { return }
        schedule(context, at)
    }

    private func schedule(_ context: ChannelHandlerContext, _ at: NIODeadline) {
        timer?.cancel()
        timerFiresAt = at
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: at) {
            self.timer = nil
            self.timerFiresAt = nil
            guard let expiresAt = self.expiresAt else { return }
            if expiresAt <= .now() {
                context.close(promise: nil)
            } else {
                self.schedule(context, expiresAt)
            }
        }
    }

    private func disarm() {
        expiresAt = nil
    }

    private func stopTimer() {
        expiresAt = nil
        timer?.cancel()
        timer = nil
        timerFiresAt = nil
    }
}
