import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How many malloc arenas glibc may make in this process (issue 49, item 5).
///
/// glibc gives each thread that allocates while another holds an arena's lock an arena of its
/// own, up to eight per core. NIO's event loops, Swift's cooperative pool and `PQ`'s
/// connection threads all allocate, so under load the process kept up to sixteen arenas on two
/// cores, each holding freed memory of its own: 107–121 MB of RSS for OTP sign-ups and passkey
/// sign-ins at 32 connections. One arena per core (at least two) measured 70–89 MB for 2–5%
/// more server CPU (BENCHMARKS.md, "Memory: glibc's malloc arenas").
///
/// glibc's own `MALLOC_ARENA_MAX`, when set, wins: this changes nothing then.
enum MallocArenas {
    /// `M_ARENA_MAX` of <malloc.h>.
    static let mArenaMax: Int32 = -8

    /// The arenas for a machine of `cores` cores: one per core, at least two.
    static func limit(cores: Int) -> Int {
        max(2, cores)
    }

    /// Sets the limit unless the environment set one. Call first thing, before other threads start.
    /// - Returns: the limit set, or nil (set by the environment, or not glibc).
    @discardableResult
    static func apply(environment: [String: String], cores: Int) -> Int? {
        #if canImport(Glibc)
        guard environment["MALLOC_ARENA_MAX"] == nil else { return nil }
        // `mallopt` is in <malloc.h>, which Glibc's module does not export: found by name.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "mallopt") else { return nil }
        let arenas = limit(cores: cores)
        return unsafeBitCast(symbol, to: Mallopt.self)(mArenaMax, Int32(arenas)) == 1 ? arenas : nil
        #else
        return nil
        #endif
    }
}
