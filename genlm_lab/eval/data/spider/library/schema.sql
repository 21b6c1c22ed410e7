-- A small public library: authors, their books, branches, members and loans (invented data).
CREATE TABLE author (
  author_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  nationality TEXT NOT NULL,
  birth_year INTEGER NOT NULL
);

CREATE TABLE book (
  book_id INTEGER PRIMARY KEY,
  title TEXT NOT NULL,
  author_id INTEGER NOT NULL REFERENCES author (author_id),
  genre TEXT NOT NULL,
  publication_year INTEGER NOT NULL,
  pages INTEGER NOT NULL
);

CREATE TABLE branch (
  branch_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  district TEXT NOT NULL,
  opened_year INTEGER NOT NULL
);

CREATE TABLE member (
  member_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  membership TEXT NOT NULL,
  join_year INTEGER NOT NULL,
  home_branch_id INTEGER NOT NULL REFERENCES branch (branch_id)
);

CREATE TABLE loan (
  loan_id INTEGER PRIMARY KEY,
  book_id INTEGER NOT NULL REFERENCES book (book_id),
  member_id INTEGER NOT NULL REFERENCES member (member_id),
  branch_id INTEGER NOT NULL REFERENCES branch (branch_id),
  loan_date TEXT NOT NULL,
  due_date TEXT NOT NULL,
  return_date TEXT
);
