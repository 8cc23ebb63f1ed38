#!/usr/bin/python3
# make_tool_calls.py — writes datasets/gates/tool-calls.jsonl: prompts whose
# answer must be one structured tool call (all written for sixi).
#
#   /usr/bin/python3 datasets/gates/make_tool_calls.py
#
# Each case offers two to four tools (the right one and plausible
# distractors); the expected call names the tool and the argument values that
# must appear. Arguments must also validate against the tool's schema, which
# uses only the subset src/datasets/jschema.c implements.
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def tool(name, desc, props, required):
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": props, "required": required, "additionalProperties": False}}}


TOOLS = {
    "get_weather": tool("get_weather", "Current weather for a city.", {
        "city": {"type": "string", "minLength": 1},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["city", "unit"]),
    "convert_currency": tool("convert_currency", "Convert an amount between currencies.", {
        "amount": {"type": "number", "exclusiveMinimum": 0},
        "from": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "to": {"type": "string", "pattern": "^[A-Z]{3}$"}}, ["amount", "from", "to"]),
    "create_event": tool("create_event", "Add an event to the calendar.", {
        "title": {"type": "string", "minLength": 1, "maxLength": 100},
        "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "time": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"},
        "duration_minutes": {"type": "integer", "minimum": 1, "maximum": 1440}},
        ["title", "date", "time", "duration_minutes"]),
    "send_email": tool("send_email", "Send an email.", {
        "to": {"type": "array", "items": {"type": "string", "pattern": "^[^@ ]+@[^@ ]+$"}, "minItems": 1},
        "subject": {"type": "string", "minLength": 1},
        "body": {"type": "string"}}, ["to", "subject", "body"]),
    "search_flights": tool("search_flights", "Search one-way flights.", {
        "origin": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "destination": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "passengers": {"type": "integer", "minimum": 1, "maximum": 9}},
        ["origin", "destination", "date", "passengers"]),
    "set_timer": tool("set_timer", "Start a countdown timer.", {
        "seconds": {"type": "integer", "minimum": 1, "maximum": 86400},
        "label": {"type": "string"}}, ["seconds"]),
    "add_todo": tool("add_todo", "Add an item to the to-do list.", {
        "text": {"type": "string", "minLength": 1},
        "priority": {"type": "string", "enum": ["low", "normal", "high"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5}}, ["text", "priority"]),
    "lookup_stock": tool("lookup_stock", "Latest price of a listed share.", {
        "ticker": {"type": "string", "pattern": "^[A-Z]{1,5}$"}}, ["ticker"]),
    "translate": tool("translate", "Translate text between languages.", {
        "text": {"type": "string", "minLength": 1},
        "source_lang": {"type": "string", "pattern": "^[a-z]{2}$"},
        "target_lang": {"type": "string", "pattern": "^[a-z]{2}$"}}, ["text", "target_lang"]),
    "set_thermostat": tool("set_thermostat", "Set the heating target of a room.", {
        "room": {"type": "string", "enum": ["living room", "bedroom", "kitchen", "office"]},
        "celsius": {"type": "number", "minimum": 5, "maximum": 30}}, ["room", "celsius"]),
    "book_table": tool("book_table", "Reserve a restaurant table.", {
        "restaurant": {"type": "string", "minLength": 1},
        "people": {"type": "integer", "minimum": 1, "maximum": 20},
        "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "time": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"}}, ["restaurant", "people", "date", "time"]),
    "compute_route": tool("compute_route", "Travel time between two addresses.", {
        "from_address": {"type": "string", "minLength": 1},
        "to_address": {"type": "string", "minLength": 1},
        "mode": {"type": "string", "enum": ["driving", "walking", "cycling", "transit"]}},
        ["from_address", "to_address", "mode"]),
}

CASES = [
    ("weather-oslo", "What's the weather like in Oslo right now? I want it in celsius.",
     ["get_weather", "lookup_stock"], "get_weather", {"city": "Oslo", "unit": "celsius"}),
    ("weather-phoenix", "Is it hot in Phoenix today? Give me the temperature in fahrenheit.",
     ["get_weather", "set_thermostat"], "get_weather", {"city": "Phoenix", "unit": "fahrenheit"}),
    ("currency-eur-jpy", "How many Japanese yen do I get for 250 euros?",
     ["convert_currency", "lookup_stock"], "convert_currency", {"amount": 250, "from": "EUR", "to": "JPY"}),
    ("currency-gbp-usd", "Convert 19.99 British pounds to US dollars.",
     ["convert_currency", "get_weather"], "convert_currency", {"amount": 19.99, "from": "GBP", "to": "USD"}),
    ("event-dentist", "Put a dentist appointment in my calendar on 2026-03-14 at 09:30, it takes 45 minutes. "
     "Call it 'Dentist'.", ["create_event", "add_todo", "set_timer"], "create_event",
     {"title": "Dentist", "date": "2026-03-14", "time": "09:30", "duration_minutes": 45}),
    ("event-review", "Schedule 'Quarterly review' for 2026-07-01 at 14:00 for two hours.",
     ["create_event", "send_email"], "create_event",
     {"title": "Quarterly review", "date": "2026-07-01", "time": "14:00", "duration_minutes": 120}),
    ("email-invoice", "Email ana@example.org with the subject 'Invoice 42' and the body 'Attached, thanks.'",
     ["send_email", "add_todo"], "send_email",
     {"to": ["ana@example.org"], "subject": "Invoice 42", "body": "Attached, thanks."}),
    ("email-two", "Send an email to bo@example.com and cy@example.com, subject 'Lunch', body 'Noon at the usual "
     "place?'", ["send_email", "book_table"], "send_email",
     {"to": ["bo@example.com", "cy@example.com"], "subject": "Lunch", "body": "Noon at the usual place?"}),
    ("flight-lhr-jfk", "Find flights from LHR to JFK on 2026-05-20 for 2 passengers.",
     ["search_flights", "compute_route"], "search_flights",
     {"origin": "LHR", "destination": "JFK", "date": "2026-05-20", "passengers": 2}),
    ("flight-single", "I need one seat from Berlin Brandenburg (BER) to Lisbon (LIS) on 2026-09-03.",
     ["search_flights", "book_table", "get_weather"], "search_flights",
     {"origin": "BER", "destination": "LIS", "date": "2026-09-03", "passengers": 1}),
    ("timer-tea", "Set a timer for 4 minutes labelled 'tea'.",
     ["set_timer", "create_event"], "set_timer", {"seconds": 240, "label": "tea"}),
    ("timer-hour", "Start a countdown of one and a half hours.",
     ["set_timer", "add_todo"], "set_timer", {"seconds": 5400}),
    ("todo-high", "Add 'renew passport' to my to-do list with high priority.",
     ["add_todo", "create_event"], "add_todo", {"text": "renew passport", "priority": "high"}),
    ("todo-tags", "Remind me to buy oat milk: low priority, tag it 'shopping'.",
     ["add_todo", "send_email"], "add_todo", {"text": "buy oat milk", "priority": "low", "tags": ["shopping"]}),
    ("stock-nvda", "What is NVDA trading at?",
     ["lookup_stock", "convert_currency"], "lookup_stock", {"ticker": "NVDA"}),
    ("stock-ibm", "Look up the current share price of IBM for me.",
     ["lookup_stock", "get_weather"], "lookup_stock", {"ticker": "IBM"}),
    ("translate-de", "Translate 'Where is the station?' into German.",
     ["translate", "compute_route"], "translate", {"text": "Where is the station?", "target_lang": "de"}),
    ("translate-fr-es", "Translate the French sentence 'Je suis en retard' into Spanish.",
     ["translate", "send_email"], "translate",
     {"text": "Je suis en retard", "source_lang": "fr", "target_lang": "es"}),
    ("thermostat-bedroom", "Set the bedroom to 19 degrees Celsius.",
     ["set_thermostat", "get_weather"], "set_thermostat", {"room": "bedroom", "celsius": 19}),
    ("thermostat-office", "Make the office 21.5 degrees.",
     ["set_thermostat", "set_timer"], "set_thermostat", {"room": "office", "celsius": 21.5}),
    ("table-four", "Book a table for 4 at Trattoria Lupo on 2026-02-14 at 19:30.",
     ["book_table", "create_event"], "book_table",
     {"restaurant": "Trattoria Lupo", "people": 4, "date": "2026-02-14", "time": "19:30"}),
    ("route-walk", "How long does it take to walk from 12 Mill Lane to 3 Station Road?",
     ["compute_route", "search_flights"], "compute_route",
     {"from_address": "12 Mill Lane", "to_address": "3 Station Road", "mode": "walking"}),
    ("route-transit", "By public transport, how long from Central Library to 88 Harbour Street?",
     ["compute_route", "get_weather", "book_table"], "compute_route",
     {"from_address": "Central Library", "to_address": "88 Harbour Street", "mode": "transit"}),
    ("currency-chf", "I have 1200 Swiss francs. What is that in euros?",
     ["convert_currency", "lookup_stock", "translate"], "convert_currency",
     {"amount": 1200, "from": "CHF", "to": "EUR"}),
]

INSTRUCTION = " Use the tools provided; answer with a single tool call."


def main():
    with open(os.path.join(HERE, "tool-calls.jsonl"), "w") as f:
        for cid, prompt, offered, name, args in CASES:
            line = {"id": "tool-calls/" + cid, "prompt": prompt + INSTRUCTION,
                    "tools": [TOOLS[t] for t in offered], "expect": {"name": name, "arguments": args}}
            f.write(json.dumps(line, sort_keys=True) + "\n")
    print("%d tool-call cases over %d tools" % (len(CASES), len(TOOLS)))


main()
