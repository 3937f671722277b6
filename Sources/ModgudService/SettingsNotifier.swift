import Foundation
import PQ

/// How a change of settings reaches every instance's caches: this instance's copies are
/// dropped at once, the others are told (`SettingsChangeListener`), and the call returns once
/// every serving instance has applied the change (or after the caches' age limit, 5 s), so
/// that the change holds for the next request everywhere once the caller answers (issue 40).
public struct SettingsNotifier: Sendable {
    let pool: PQPool
    /// Drops this instance's cached copies (`nil`: everything).
    let invalidate: @Sendable (SettingsChange?) -> Void

    /// Drops this instance's copies of what `change` names (`nil`: everything), telling no one.
    public func invalidateLocally(_ change: SettingsChange?) {
        invalidate(change)
    }

    /// After a committed change: drops this instance's copy, tells the other instances and
    /// waits for them.
    public func changed(_ change: SettingsChange) async {
        invalidate(change)
        await SettingsChangeListener.announce(change, pool: pool)
    }
}
