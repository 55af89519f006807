//! Interop with fe2o3-amqp: performatives, SASL frames and messages encoded by serde_amqp from
//! fe2o3-amqp-types decode here to the same values; and composites encoded here decode with
//! serde_amqp into the same fe2o3 types.

use amqpeek::codec::amqp10::{
    self, AnyTarget, DeliveryState, Frame, MessageAssembler, MessageBody, Performative,
    ReceiverSettleMode, Role, SaslFrame, SenderSettleMode, Value,
};
use bytes::Bytes;
use fe2o3_amqp::types::definitions::{self, AmqpError, ErrorCondition, Handle, LinkError};
use fe2o3_amqp::types::messaging::message::__private::Serializable;
use fe2o3_amqp::types::messaging::{
    self as msg, Accepted, ApplicationProperties, Header, Message, MessageId, Modified, Properties,
    Received, Rejected, Released, Source, Target,
};
use fe2o3_amqp::types::performatives::{
    Attach, Begin, Close, Detach, Disposition, End, Flow, Open, Transfer,
};
use fe2o3_amqp::types::primitives::{Array, Binary, OrderedMap, Symbol, Timestamp};
use fe2o3_amqp::types::sasl::{
    SaslChallenge, SaslCode, SaslInit, SaslMechanisms, SaslOutcome, SaslResponse,
};
use serde_amqp::described::Described;
use serde_amqp::descriptor::Descriptor;

fn frame_of(t: u8, ch: u16, body: &[u8], payload: &[u8]) -> Frame {
    let mut raw = ((8 + body.len() + payload.len()) as u32)
        .to_be_bytes()
        .to_vec();
    raw.extend_from_slice(&[2, t]);
    raw.extend_from_slice(&ch.to_be_bytes());
    raw.extend_from_slice(body);
    raw.extend_from_slice(payload);
    amqp10::decode_frame(Bytes::from(raw), 0).unwrap_or_else(|e| panic!("{e}"))
}
fn perf<T: serde::Serialize>(p: &T) -> Performative {
    let f = frame_of(0, 0, &serde_amqp::to_vec(p).unwrap(), b"");
    f.performative().cloned().unwrap()
}
fn sasl<T: serde::Serialize>(p: &T) -> (Frame, SaslFrame) {
    let f = frame_of(1, 0, &serde_amqp::to_vec(p).unwrap(), b"");
    let s = f.sasl().cloned().unwrap();
    (f, s)
}
fn syms(v: &[amqp10::Symbol]) -> Vec<&str> {
    v.iter().map(|s| s.as_str()).collect()
}

#[test]
fn open_begin_end_close() {
    let mut props = OrderedMap::new();
    props.insert(
        Symbol::from("product"),
        serde_amqp::Value::String("fe2o3".into()),
    );
    let open = Open {
        container_id: "c-1".into(),
        hostname: Some("vhost".into()),
        max_frame_size: 65536.into(),
        channel_max: 7.into(),
        idle_time_out: Some(30_000),
        outgoing_locales: None,
        incoming_locales: Some(Array(vec![Symbol::from("en-US")])),
        offered_capabilities: Some(Array(vec![Symbol::from("ANONYMOUS-RELAY")])),
        desired_capabilities: None,
        properties: Some(props),
    };
    let Performative::Open(o) = perf(&open) else {
        panic!()
    };
    assert_eq!(o.container_id, "c-1");
    assert_eq!(o.hostname.unwrap(), "vhost");
    assert_eq!(
        (o.max_frame_size, o.channel_max, o.idle_time_out),
        (65536, 7, Some(30_000))
    );
    assert_eq!(syms(&o.incoming_locales), ["en-US"]);
    assert_eq!(syms(&o.offered_capabilities), ["ANONYMOUS-RELAY"]);
    let p = o.properties.unwrap();
    assert_eq!(
        p[0],
        (
            Value::Symbol("product".into()),
            Value::String("fe2o3".into())
        )
    );

    let begin = Begin {
        remote_channel: Some(3),
        next_outgoing_id: 1,
        incoming_window: 2048,
        outgoing_window: 4096,
        handle_max: Handle(255),
        offered_capabilities: None,
        desired_capabilities: None,
        properties: None,
    };
    let Performative::Begin(b) = perf(&begin) else {
        panic!()
    };
    assert_eq!(
        (
            b.remote_channel,
            b.next_outgoing_id,
            b.incoming_window,
            b.outgoing_window,
            b.handle_max
        ),
        (Some(3), 1, 2048, 4096, 255)
    );

    let err = definitions::Error::new(
        ErrorCondition::AmqpError(AmqpError::NotFound),
        Some("no queue".to_string()),
        None,
    );
    let Performative::End(e) = perf(&End {
        error: Some(err.clone()),
    }) else {
        panic!()
    };
    let e = e.error.unwrap();
    assert_eq!(
        (e.condition.as_str(), e.description.unwrap().as_str()),
        ("amqp:not-found", "no queue")
    );
    let Performative::Close(c) = perf(&Close { error: None }) else {
        panic!()
    };
    assert!(c.error.is_none());
}

#[test]
fn attach_with_source_target_and_filter() {
    let mut filter = OrderedMap::new();
    filter.insert(
        Symbol::from("jms-selector"),
        serde_amqp::Value::Described(Box::new(Described {
            descriptor: Descriptor::Name(Symbol::from("apache.org:selector-filter:string")),
            value: serde_amqp::Value::String("color = 'red'".into()),
        })),
    );
    let source = Source::builder()
        .address("q1")
        .durable(msg::TerminusDurability::UnsettledState)
        .expiry_policy(msg::TerminusExpiryPolicy::Never)
        .timeout(60)
        .filter(filter)
        .default_outcome(msg::Outcome::Released(Released {}))
        .outcomes(Array(vec![
            Symbol::from("amqp:accepted:list"),
            Symbol::from("amqp:released:list"),
        ]))
        .capabilities(Array(vec![Symbol::from("queue")]))
        .build();
    let target = Target::builder().address("q2").build();
    let attach = Attach {
        name: "sender-link".into(),
        handle: Handle(3),
        role: definitions::Role::Receiver,
        snd_settle_mode: definitions::SenderSettleMode::Settled,
        rcv_settle_mode: definitions::ReceiverSettleMode::Second,
        source: Some(Box::new(source)),
        target: Some(Box::new(msg::TargetArchetype::Target(target))),
        unsettled: None,
        incomplete_unsettled: false,
        initial_delivery_count: Some(0),
        max_message_size: Some(1 << 20),
        offered_capabilities: None,
        desired_capabilities: Some(Array(vec![Symbol::from("x")])),
        properties: None,
    };
    let bytes = serde_amqp::to_vec(&attach).unwrap();
    let f = frame_of(0, 1, &bytes, b"");
    let Some(Performative::Attach(a)) = f.performative() else {
        panic!()
    };
    assert_eq!(
        (a.name.as_str(), a.handle, a.role),
        ("sender-link", 3, Role::Receiver)
    );
    assert_eq!(
        (a.snd_settle_mode, a.rcv_settle_mode),
        (SenderSettleMode::Settled, ReceiverSettleMode::Second)
    );
    assert_eq!(
        (a.initial_delivery_count, a.max_message_size),
        (Some(0), Some(1 << 20))
    );
    assert_eq!(syms(&a.desired_capabilities), ["x"]);
    let s = a.source.as_ref().unwrap();
    assert_eq!(s.address, Some(Value::String("q1".into())));
    assert_eq!(
        (s.durable, s.expiry_policy.as_str(), s.timeout),
        (2, "never", 60)
    );
    assert_eq!(s.default_outcome, Some(DeliveryState::Released));
    assert_eq!(
        syms(&s.outcomes),
        ["amqp:accepted:list", "amqp:released:list"]
    );
    assert_eq!(syms(&s.capabilities), ["queue"]);
    let (k, v) = &s.filter.as_ref().unwrap()[0];
    assert_eq!(k, &Value::Symbol("jms-selector".into()));
    let d = v.as_described().unwrap();
    assert_eq!(d.value, Value::String("color = 'red'".into()));
    assert_eq!(
        a.target.as_ref().and_then(AnyTarget::address),
        Some(&Value::String("q2".into()))
    );
    assert!(
        f.summary().contains(
            "filter={:jms-selector=@:apache.org:selector-filter:string \"color = 'red'\"}"
        )
    );
    // The field spans cover exactly the bytes of each field.
    let c = f.composite().unwrap();
    assert_eq!(c.fields(&f.raw).len(), 13); // trailing null properties omitted by fe2o3
    for (i, v) in c.fields(&f.raw).iter().enumerate() {
        let span = c.span(&f.raw, i).unwrap();
        let mut r = amqpeek::codec::Reader::new(f.raw.slice(span), 0);
        assert_eq!(&amqp10::value::decode(&mut r).unwrap(), v, "field {i}");
        assert!(r.is_empty());
    }
}

#[test]
fn flow_both_directions() {
    let flow = Flow {
        next_incoming_id: Some(10),
        incoming_window: 2048,
        next_outgoing_id: 20,
        outgoing_window: 100,
        handle: Some(Handle(1)),
        delivery_count: Some(5),
        link_credit: Some(50),
        available: Some(0),
        drain: true,
        echo: false,
        properties: None,
    };
    let Performative::Flow(f) = perf(&flow) else {
        panic!()
    };
    assert_eq!(
        (
            f.next_incoming_id,
            f.incoming_window,
            f.next_outgoing_id,
            f.outgoing_window
        ),
        (Some(10), 2048, 20, 100)
    );
    assert_eq!(
        (
            f.handle,
            f.delivery_count,
            f.link_credit,
            f.available,
            f.drain,
            f.echo
        ),
        (Some(1), Some(5), Some(50), Some(0), true, false)
    );
    // Our encoding of the same flow decodes with serde_amqp to the same fe2o3 value.
    let ours = amqp10::described_list(
        0x13,
        vec![
            Value::Uint(10),
            Value::Uint(2048),
            Value::Uint(20),
            Value::Uint(100),
            Value::Uint(1),
            Value::Uint(5),
            Value::Uint(50),
            Value::Uint(0),
            Value::Bool(true),
            Value::Bool(false),
        ],
    );
    let back: Flow = serde_amqp::from_slice(&ours.to_bytes().unwrap()).unwrap();
    assert_eq!(back, flow);
}

#[test]
fn transfer_with_a_message_of_several_sections() {
    let mut app = OrderedMap::new();
    app.insert(
        "k".to_string(),
        fe2o3_amqp::types::primitives::SimpleValue::Int(42),
    );
    let message = Message::builder()
        .header(Header {
            durable: true,
            priority: 7.into(),
            ttl: Some(1000),
            first_acquirer: false,
            delivery_count: 1,
        })
        .properties(Properties {
            message_id: Some(MessageId::String("m-1".into())),
            subject: Some("subj".into()),
            content_type: Some(Symbol::from("text/plain")),
            creation_time: Some(Timestamp::from_milliseconds(1_700_000_000_000)),
            ..Default::default()
        })
        .application_properties(ApplicationProperties(app))
        .data(Binary::from(b"hello fe2o3".to_vec()))
        .build();
    let payload = serde_amqp::to_vec(&Serializable(message)).unwrap();
    let transfer = Transfer {
        handle: Handle(0),
        delivery_id: Some(9),
        delivery_tag: Some(Binary::from(vec![0, 0, 0, 9])),
        message_format: Some(0),
        settled: Some(false),
        more: false,
        rcv_settle_mode: None,
        state: None,
        resume: false,
        aborted: false,
        batchable: false,
    };
    let f = frame_of(0, 0, &serde_amqp::to_vec(&transfer).unwrap(), &payload);
    let t = f.transfer().unwrap();
    assert_eq!(
        (t.handle, t.delivery_id, t.settled, t.more),
        (0, Some(9), Some(false), false)
    );
    assert_eq!(t.delivery_tag.as_deref(), Some(&[0, 0, 0, 9][..]));
    assert_eq!(f.payload()[..], payload[..]);
    let m = MessageAssembler::default().push(&f).unwrap().unwrap();
    let h = m.header().unwrap();
    assert_eq!(
        (h.durable, h.priority, h.ttl, h.delivery_count),
        (true, 7, Some(1000), 1)
    );
    let p = m.properties().unwrap();
    assert_eq!(p.message_id, Some(Value::String("m-1".into())));
    assert_eq!(p.subject.unwrap(), "subj");
    assert_eq!(p.content_type.unwrap(), "text/plain");
    assert_eq!(p.creation_time, Some(1_700_000_000_000));
    assert_eq!(
        m.application_properties().unwrap()[0],
        (Value::String("k".into()), Value::Int(42))
    );
    assert_eq!(
        m.body(),
        MessageBody::Data(vec![Bytes::from_static(b"hello fe2o3")])
    );
    assert_eq!(m.to_json(100)["data"][0]["text"], "hello fe2o3");

    // amqp-value body.
    let message = Message::builder().value("just a string").build();
    let payload = serde_amqp::to_vec(&Serializable(message)).unwrap();
    let f = frame_of(0, 0, &serde_amqp::to_vec(&transfer).unwrap(), &payload);
    let m = MessageAssembler::default().push(&f).unwrap().unwrap();
    assert_eq!(
        m.body(),
        MessageBody::Value(Value::String("just a string".into()))
    );
}

#[test]
fn disposition_with_each_outcome() {
    use amqpeek::codec::amqp10::delivery_state as ds;
    let err = definitions::Error::new(
        ErrorCondition::LinkError(LinkError::MessageSizeExceeded),
        None,
        None,
    );
    let cases: Vec<(msg::DeliveryState, DeliveryState)> = vec![
        (
            msg::DeliveryState::Received(Received {
                section_number: 2,
                section_offset: 100,
            }),
            DeliveryState::Received(ds::Received {
                section_number: 2,
                section_offset: 100,
            }),
        ),
        (
            msg::DeliveryState::Accepted(Accepted {}),
            DeliveryState::Accepted,
        ),
        (
            msg::DeliveryState::Released(Released {}),
            DeliveryState::Released,
        ),
        (
            msg::DeliveryState::Modified(Modified {
                delivery_failed: Some(true),
                undeliverable_here: None,
                message_annotations: None,
            }),
            DeliveryState::Modified(ds::Modified {
                delivery_failed: Some(true),
                undeliverable_here: None,
                message_annotations: None,
            }),
        ),
    ];
    for (theirs, ours) in cases {
        let d = Disposition {
            role: definitions::Role::Receiver,
            first: 4,
            last: Some(8),
            settled: true,
            state: Some(theirs),
            batchable: false,
        };
        let Performative::Disposition(x) = perf(&d) else {
            panic!()
        };
        assert_eq!(
            (x.role, x.first, x.last, x.settled),
            (Role::Receiver, 4, Some(8), true)
        );
        assert_eq!(x.state.unwrap(), ours);
    }
    let d = Disposition {
        role: definitions::Role::Sender,
        first: 1,
        last: None,
        settled: false,
        state: Some(msg::DeliveryState::Rejected(Rejected { error: Some(err) })),
        batchable: true,
    };
    let Performative::Disposition(x) = perf(&d) else {
        panic!()
    };
    assert_eq!((x.role, x.last, x.batchable), (Role::Sender, None, true));
    let Some(DeliveryState::Rejected(ds::Rejected { error: Some(e) })) = x.state else {
        panic!()
    };
    assert_eq!(e.condition, "amqp:link:message-size-exceeded");
}

#[test]
fn detach_with_error() {
    let mut info = OrderedMap::new();
    info.insert(Symbol::from("hint"), serde_amqp::Value::Uint(1));
    let d = Detach {
        handle: Handle(2),
        closed: true,
        error: Some(definitions::Error::new(
            ErrorCondition::LinkError(LinkError::DetachForced),
            Some("forced".to_string()),
            Some(info),
        )),
    };
    let Performative::Detach(x) = perf(&d) else {
        panic!()
    };
    assert_eq!((x.handle, x.closed), (2, true));
    let e = x.error.unwrap();
    assert_eq!(e.condition, "amqp:link:detach-forced");
    assert_eq!(e.info.unwrap()[0].1, Value::Uint(1));
}

#[test]
fn sasl_frames() {
    let (_, s) = sasl(&SaslMechanisms {
        sasl_server_mechanisms: Array(vec![Symbol::from("PLAIN"), Symbol::from("ANONYMOUS")]),
    });
    let SaslFrame::Mechanisms {
        sasl_server_mechanisms,
    } = s
    else {
        panic!()
    };
    assert_eq!(syms(&sasl_server_mechanisms), ["PLAIN", "ANONYMOUS"]);

    let (f, s) = sasl(&SaslInit {
        mechanism: Symbol::from("PLAIN"),
        initial_response: Some(Binary::from(b"\0guest\0hunter2".to_vec())),
        hostname: Some("localhost".into()),
    });
    let SaslFrame::Init {
        mechanism,
        hostname,
        ..
    } = &s
    else {
        panic!()
    };
    assert_eq!(
        (mechanism.as_str(), hostname.as_ref().unwrap().as_str()),
        ("PLAIN", "localhost")
    );
    let r = f.secret_ranges();
    assert_eq!(r.len(), 1);
    assert_eq!(&f.raw[r[0].clone()], b"hunter2");

    let (_, s) = sasl(&SaslChallenge {
        challenge: Binary::from(b"c".to_vec()),
    });
    assert_eq!(
        s,
        SaslFrame::Challenge {
            challenge: Bytes::from_static(b"c")
        }
    );
    let (f, s) = sasl(&SaslResponse {
        response: Binary::from(b"r".to_vec()),
    });
    assert_eq!(
        s,
        SaslFrame::Response {
            response: Bytes::from_static(b"r")
        }
    );
    assert_eq!(&f.raw[f.secret_ranges()[0].clone()], b"r");
    let (_, s) = sasl(&SaslOutcome {
        code: SaslCode::Auth,
        additional_data: None,
    });
    let SaslFrame::Outcome { code, .. } = s else {
        panic!()
    };
    assert_eq!(code.name(), "auth");
}
