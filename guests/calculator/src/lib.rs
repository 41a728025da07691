//! A plain WebAssembly component, written as an outside author writes one:
//! its own WIT world (`wit/calculator.wit`), bindings from wit-bindgen, no
//! CLAT contract. CLAT offers its exported functions as tools, their input
//! schemas derived from the WIT types; its resource is refused as a tool.

wit_bindgen::generate!({ path: "wit", world: "calculator" });

use std::cell::Cell;

use exports::example::calculator::math::{Guest as Math, GuestCounter, Point, Rounding, Shape, Style, Summary};

struct Calculator;

impl Guest for Calculator {
    fn greet(name: String, times: Option<u8>) -> String {
        vec![format!("Hello, {name}!"); usize::from(times.unwrap_or(1))].join(" ")
    }
}

impl Math for Calculator {
    type Counter = Counter;

    fn add(a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }

    fn divide(a: f64, b: f64) -> Result<f64, String> {
        if b == 0.0 { Err(format!("cannot divide {a} by zero")) } else { Ok(a / b) }
    }

    fn distance(from: Point, to: Point) -> f64 {
        ((to.x - from.x).powi(2) + (to.y - from.y).powi(2)).sqrt()
    }

    fn area(shape: Shape) -> f64 {
        match shape {
            Shape::Circle(radius) => std::f64::consts::PI * radius * radius,
            Shape::Rectangle((width, height)) => width * height,
            Shape::Dot => 0.0,
        }
    }

    fn round(value: f64, mode: Rounding) -> i64 {
        match mode {
            Rounding::Down => value.floor() as i64,
            Rounding::Nearest => value.round() as i64,
            Rounding::Up => value.ceil() as i64,
        }
    }

    fn describe(text: String, style: Style, marker: char) -> String {
        let mut words = Vec::new();
        for (flag, word) in [(Style::BOLD, "bold"), (Style::ITALIC, "italic"), (Style::UNDERLINE, "underlined")] {
            if style.bits() & flag.bits() != 0 {
                words.push(word);
            }
        }
        let how = if words.is_empty() { "plain".to_string() } else { words.join(" and ") };
        format!("{marker} {text} ({how})")
    }

    fn stats(values: Vec<f64>) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let sum: f64 = values.iter().sum();
        Some(Summary {
            count: values.len() as u32,
            mean: sum / values.len() as f64,
            smallest: values.iter().copied().fold(f64::INFINITY, f64::min),
            largest: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    fn swap(pair: (String, u64)) -> (u64, String) {
        (pair.1, pair.0)
    }

    fn check(value: i64, limit: Option<i64>, strict: bool) -> Result<(), String> {
        match limit {
            Some(limit) if value > limit || (strict && value == limit) => {
                Err(format!("{value} is past the limit {limit}"))
            }
            _ => Ok(()),
        }
    }

    fn tally(start: u32) -> exports::example::calculator::math::Counter {
        exports::example::calculator::math::Counter::new(Counter { total: Cell::new(start) })
    }

    fn range(count: u32) -> Vec<u32> {
        (0..count).collect()
    }

    fn greet(name: String) -> String {
        format!("{name}, the answer is 42.")
    }
}

/// The resource behind `counter`.
struct Counter {
    total: Cell<u32>,
}

impl GuestCounter for Counter {
    fn new(start: u32) -> Self {
        Counter { total: Cell::new(start) }
    }

    fn increment(&self) -> u32 {
        self.total.set(self.total.get() + 1);
        self.total.get()
    }
}

export!(Calculator);
