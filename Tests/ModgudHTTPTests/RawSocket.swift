#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP client socket for tests that must misbehave at the byte level (slow clients,
/// partial requests), which an HTTP client library would not do.
final class RawSocket {
    private let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure("connect errno \(errno)")
        }
    }

    deinit { close(fd) }

    /// A loopback port that was free a moment ago.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard bound == 0, named == 0 else { throw Failure("bind") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    struct Failure: Error { let what: String; init(_ what: String) { self.what = what } }

    /// Sends bytes; false when the peer has closed the connection.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Whether the server has closed the connection: a read that finds end of stream (or a
    /// reset) within `timeoutMilliseconds`. Data that arrives first is read and skipped.
    func isClosedByPeer(within timeoutMilliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var remaining = timeoutMilliseconds
        while remaining >= 0 {
            let started = now()
            guard poll(&descriptor, 1, remaining) > 0 else { return false }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { return true }
            remaining -= Int32(now() - started)
        }
        return false
    }

    /// Reads until the bytes received contain `marker` or `timeoutMilliseconds` pass.
    func read(until marker: String, timeoutMilliseconds: Int32) -> String {
        var received: [UInt8] = []
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = now() + Int(timeoutMilliseconds)
        while now() < deadline {
            guard poll(&descriptor, 1, Int32(max(0, deadline - now()))) > 0 else { break }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer.prefix(count)
            if String(decoding: received, as: UTF8.self).contains(marker) { break }
        }
        return String(decoding: received, as: UTF8.self)
    }

    private func now() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return time.tv_sec * 1000 + time.tv_nsec / 1_000_000
    }
}
