import EventSourcing

/// The event-type registry of the product, built once at start-up (docs/architecture.md, "House habits").
public enum ModgudEvents {
    public static let registry: EventTypeRegistry = {
        var registry = EventTypeRegistry()
        RealmEvent.register(in: &registry)
        ClientEvent.register(in: &registry)
        UserEvent.register(in: &registry)
        TokenFamilyEvent.register(in: &registry)
        EmailChallengeEvent.register(in: &registry)
        PasskeyCeremonyEvent.register(in: &registry)
        PasskeyEvent.register(in: &registry)
        SignalStreamEvent.register(in: &registry)
        OperatorLogEvent.register(in: &registry)
        RateLimitLogEvent.register(in: &registry)
        AuthorizationSessionEvent.register(in: &registry)
        DeviceAuthorizationEvent.register(in: &registry)
        return registry
    }()
}
