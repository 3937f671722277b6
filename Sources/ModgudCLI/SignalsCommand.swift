import ArgumentParser
import Foundation
import ModgudDomain
import ModgudService

/// `modgud ssf`: the Shared Signals transmitter's streams and dead letters (issue 30).
struct SignalsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ssf", abstract: "Shared Signals: receivers' streams, dead SETs, and retrying them.",
        subcommands: [Streams.self, Status.self, Dead.self, Retry.self])

    struct Streams: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every receiver's stream: delivery, status, SETs pending and dead.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let streams = try await AdminContext.run(database) { try await SignalOutbox(pool: $0.pool).streams() }
            print("realm\tclient\tstream_id\tdelivery\tstatus\tpending\tdead")
            for stream in streams {
                let delivery = stream.method.hasSuffix("8935") ? "push" : "poll"
                print("\(stream.realm)\t\(stream.clientID)\t\(stream.streamID)\t\(delivery)\t\(stream.status)\t\(stream.pending)\t\(stream.dead)")
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enable, pause (SETs held) or disable (dropped) a receiver's stream; the receiver is told with a stream-updated SET.")
        @OptionGroup var database: DatabaseOptions
        @Argument var realm: String
        @Argument(help: "The receiver's client id.") var client: String
        @Argument(help: "enabled, paused or disabled.") var status: String
        @Option(help: "Why, for the receiver (at most 256 characters).") var reason: String?

        func run() async throws {
            guard let status = SignalStreamStatus(rawValue: status) else { throw ValidationError("the status is enabled, paused or disabled") }
            let state = try await AdminContext.run(database) {
                try await $0.services.signalStreams.setStatus(
                    realm: realm, clientID: client, status: status, reason: reason, byOperator: true, metadata: $0.metadata)
            }
            print("stream \(state.streamID ?? "-") of \(client): \(state.status.rawValue)")
        }
    }

    struct Dead: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Dead SETs, newest first: stream, log position, jti, event, attempts, last error.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "How many to list.") var limit = 100

        func run() async throws {
            let dead = try await AdminContext.run(database) { try await SignalOutbox(pool: $0.pool).dead(limit: limit) }
            for set in dead {
                print("\(set.realm)\t\(set.clientID)\t\(set.streamID)\t\(set.position)\t\(set.jti)\t\(set.event)\tattempts \(set.attempts)\t\(set.lastError ?? "")")
            }
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Put dead SETs back in line (after fixing the receiver), with their jti and order.")
        @OptionGroup var database: DatabaseOptions
        @Option(name: .customLong("stream"), help: "Only this stream_id.") var streamID: String?

        func run() async throws {
            let count = try await AdminContext.run(database) { try await SignalOutbox(pool: $0.pool).retryDead(streamID: streamID) }
            print("\(count) dead SETs are pending again")
        }
    }
}
