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
    private var deadline: Scheduled<Void>?
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
        disarm()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
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

    private func arm(_ context: ChannelHandlerContext, _ timeout: Duration) {
        disarm()
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(timeout)) {
            context.close(promise: nil)
        }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }
}
