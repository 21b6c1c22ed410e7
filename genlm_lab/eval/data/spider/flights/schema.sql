-- A small flight schedule: airports, airlines, aircraft and the flights of March 2024 (invented airlines and flights).
CREATE TABLE airport (
  code TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  city TEXT NOT NULL,
  country TEXT NOT NULL
);

CREATE TABLE airline (
  airline_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  country TEXT NOT NULL,
  founded INTEGER NOT NULL,
  alliance TEXT
);

CREATE TABLE aircraft (
  aircraft_id INTEGER PRIMARY KEY,
  model TEXT NOT NULL,
  manufacturer TEXT NOT NULL,
  seats INTEGER NOT NULL,
  range_km INTEGER NOT NULL
);

CREATE TABLE flight (
  flight_id INTEGER PRIMARY KEY,
  flight_number TEXT NOT NULL,
  airline_id INTEGER NOT NULL REFERENCES airline (airline_id),
  origin TEXT NOT NULL REFERENCES airport (code),
  destination TEXT NOT NULL REFERENCES airport (code),
  aircraft_id INTEGER NOT NULL REFERENCES aircraft (aircraft_id),
  departure_date TEXT NOT NULL,
  distance_km INTEGER NOT NULL,
  duration_min INTEGER NOT NULL,
  passengers INTEGER NOT NULL,
  status TEXT NOT NULL
);
