//! The unit tests of `template`.

use rand::SeedableRng;

use super::*;

fn resolver(names: &[&str]) -> Result<Expr, String> {
    match names {
        ["id"] => Ok(Expr::Variable(0)),
        ["users", "email"] => Ok(Expr::Feeder { feeder: 0, column: 1 }),
        ["customers"] => Ok(Expr::Constant(Value::from(40))),
        other => Err(format!("unknown variable `{}`", other.join("."))),
    }
}

fn render(text: &str) -> Value {
    let template = Template::compile(text, &resolver, &|_| Some("tok".into())).unwrap();
    let row = [Value::from("u1"), Value::from("a@example.com")];
    let mut rng = SmallRng::seed_from_u64(7);
    let seq = AtomicU64::new(0);
    let mut cx = RenderContext {
        rows: &[Some(&row)],
        variables: &[Some(Value::from(42))],
        rng: &mut rng,
        seq: &seq,
        tallies: &DrawTallies::default(),
    };
    template.render_value(&mut cx)
}

#[test]
fn a_lone_expression_keeps_its_type_and_mixed_text_is_a_string() {
    assert_eq!(render("{{ id }}"), Value::from(42));
    assert_eq!(render("/boards/{{id}}/cards"), Value::from("/boards/42/cards"));
    assert_eq!(render("{{ users.email }}"), Value::from("a@example.com"));
    assert_eq!(render("Bearer {{ env(\"TOKEN\") }}"), Value::from("Bearer tok"));
    assert_eq!(render("{{ seq() }}-{{ seq() }}"), Value::from("1-2"));
    let n = render("{{ randint(5, 6) }}").as_i64().unwrap();
    assert!((5..=6).contains(&n));
    let uuid = render("{{ uuid() }}");
    let uuid = uuid.as_str().unwrap();
    assert_eq!((uuid.len(), &uuid[14..15]), (36, "4"));
    assert!(["a", "b"].contains(&render("{{ choice('a', \"b\") }}").as_str().unwrap()));
}

#[test]
fn encoders_write_an_expression_s_integer_as_big_endian_hex() {
    assert_eq!(render("01 {{ u32be(seq()) }}"), Value::from("01 00000001"));
    assert_eq!(render("{{ u16be(id) }}"), Value::from("002a"));
    assert_eq!(render("{{ u64be(customers) }}"), Value::from("0000000000000028"));
    assert_eq!(render("{{ u16be(70000) }}"), Value::from("(70000 is not a u16be integer)"));
    assert_eq!(render("{{ u32be(users.email) }}"), Value::from("(\"a@example.com\" is not a u32be integer)"));
    let error = |text: &str| Template::compile(text, &resolver, &|_| None).unwrap_err();
    assert!(error("{{ u32be(u16be(id)) }}").contains("encode the value once"));
    assert!(error("{{ u32be(nope) }}").contains("unknown variable `nope`"));
}

#[test]
fn mistakes_are_named() {
    let error = |text: &str| Template::compile(text, &resolver, &|_| None).unwrap_err();
    assert!(error("{{ nope }}").contains("unknown variable `nope`"));
    assert!(error("{{ users.mail }}").contains("unknown variable `users.mail`"));
    assert!(error("{{ uuidx() }}").contains("unknown function `uuidx`"));
    let n = render("{{ randint(39, customers) }}").as_i64().unwrap();
    assert!((39..=40).contains(&n), "{n}");
    assert!(error("{{ randint(1, id) }}").contains("`id` changes from session to session"));
    assert!(error("{{ randint(9, 1) }}").contains("low <= high"));
    assert!(error("{{ env(\"MISSING\") }}").contains("MISSING is not set"));
    assert!(error("/a/{{ id").contains("without a closing"));
    assert!(error("{{ }}").contains("empty expression"));
}

#[test]
fn routes_name_their_placeholders() {
    let template = Template::compile("/boards/{{ id }}", &resolver, &|_| None).unwrap();
    assert_eq!(template.route(&|_| "id".to_owned()), "/boards/{id}");
}
