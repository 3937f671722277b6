import CLibPQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension PQConnection {
    /// Subscribes this connection to a NOTIFY channel.
    public func listen(_ channel: String) throws(PQError) {
        try execute("LISTEN \(PQQuery.quoteIdentifier(channel))")
    }

    /// Waits until a notification arrives or `timeout` passes, and returns what arrived.
    ///
    /// Blocks this connection's thread only (it sleeps in `poll(2)` on the socket). Use a
    /// dedicated connection for listening, not a pooled one.
    /// - Throws: `.connectionLost` when the server goes away.
    public func waitForNotifications(timeout: Duration) throws(PQError) -> [PQNotification] {
        let handle = try liveHandle(reconnect: false)
        var received = drainNotifications(handle)
        if !received.isEmpty { return received }
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, max(0, milliseconds))
        if ready < 0 && errno != EINTR {
            throw PQError(.client, message: "poll failed: errno \(errno)")
        }
        if PQconsumeInput(handle) == 0 {
            throw connectionError(handle: handle)
        }
        received = drainNotifications(handle)
        if PQstatus(handle) != CONNECTION_OK {
            throw connectionError(handle: handle)
        }
        return received
    }

    private func drainNotifications(_ handle: OpaquePointer) -> [PQNotification] {
        var received: [PQNotification] = []
        while let notice = PQnotifies(handle) {
            received.append(
                PQNotification(
                    channel: String(cString: notice.pointee.relname),
                    payload: notice.pointee.extra.map { String(cString: $0) } ?? "",
                    senderPID: notice.pointee.be_pid
                ))
            PQfreemem(notice)
        }
        return received
    }
}
