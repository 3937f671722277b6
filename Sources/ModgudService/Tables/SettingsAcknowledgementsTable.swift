import Foundation
import PQ

/// The one home of `settings_instances`' SQL (issue 40): each serving instance's settings
/// listener, the last settings change it has applied, and when it last said it was alive; and
/// the `settings_changes` sequence that numbers the changes.
enum SettingsAcknowledgementsTable {
    /// How recent a heartbeat must be for an instance to count as serving (its listener beats
    /// once a second).
    static let liveWindowSeconds = 3.0

    /// The next change number (taken before the notification that carries it).
    static let nextChange: PQQuery = "SELECT nextval('settings_changes')"

    /// Registers an instance's listener that has just dropped every cached setting: every
    /// change numbered so far counts as applied.
    static func register(instance: String) -> PQQuery {
        """
        INSERT INTO settings_instances (instance_id, acknowledged, heartbeat_at)
        VALUES (\(instance), (SELECT last_value FROM settings_changes), now())
        ON CONFLICT (instance_id) DO UPDATE SET acknowledged = greatest(settings_instances.acknowledged, EXCLUDED.acknowledged),
            heartbeat_at = now()
        """
    }

    /// The listener is alive (once a second).
    static func heartbeat(instance: String) -> PQQuery {
        "UPDATE settings_instances SET heartbeat_at = now() WHERE instance_id = \(instance)"
    }

    /// Records that the instance has applied every change up to `change`.
    static func acknowledge(instance: String, change: Int64) -> PQQuery {
        """
        UPDATE settings_instances SET acknowledged = greatest(acknowledged, \(change)), heartbeat_at = now()
        WHERE instance_id = \(instance)
        """
    }

    /// The serving instances that have not applied `change` yet.
    static func behind(change: Int64) -> PQQuery {
        """
        SELECT instance_id FROM settings_instances
        WHERE acknowledged < \(change) AND heartbeat_at > now() - make_interval(secs => \(liveWindowSeconds))
        ORDER BY instance_id
        """
    }

    /// An instance leaving (a drained shutdown), and rows of instances long gone.
    static func leave(instance: String) -> PQQuery {
        "DELETE FROM settings_instances WHERE instance_id = \(instance) OR heartbeat_at < now() - interval '1 day'"
    }
}
