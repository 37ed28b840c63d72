import { describe, expect, it } from 'vitest';
import { maskPasswords, maskSecret, maskUrlPassword } from './mask-passwords.js';

describe('maskSecret', () => {
  it('shows the last 4 characters of a long secret only', () => {
    expect(maskSecret('sk-0123456789abcd')).toBe('****abcd');
    expect(maskSecret('short-pw')).toBe('****');
    expect(maskSecret('')).toBe('(unset)');
  });
});

describe('maskPasswords', () => {
  it('masks the password of every URL in a text, keeping user and host', () => {
    const text =
      'connect to postgres://app:db-password-9876@db.internal:5432/x failed; ' +
      'model at https://bot:hunter2@llm.example/v1 too';
    expect(maskPasswords(text)).toBe(
      'connect to postgres://app:****9876@db.internal:5432/x failed; model at https://bot:****@llm.example/v1 too',
    );
  });

  it('masks a keyword password, quoted or not', () => {
    expect(maskPasswords("host=db password='a b c d e f g h' dbname=x")).toBe('host=db password=**** g h dbname=x');
    expect(maskPasswords('host=db password=secret&sslmode=require')).toBe('host=db password=****&sslmode=require');
  });

  it('masks to the last @ of a password holding an unencoded @, never showing part of it', () => {
    expect(maskPasswords('https://bot:p@ss@llm.example/v1')).toBe('https://bot:****@llm.example/v1');
  });

  it('masks a password holding a raw slash to the last @ of its URL', () => {
    expect(maskPasswords('postgres://u:Sup3r/S3cretPw@h/db')).toBe('postgres://u:****etPw@h/db');
    expect(maskPasswords('db_dsn = "postgres://u:a/b@c:9876543210@db:5432/x" # note')).toBe(
      'db_dsn = "postgres://u:****3210@db:5432/x" # note',
    );
    expect(maskPasswords('first https://a:p/1@h1/v1 then https://b:q/2@h2/v1')).toBe(
      'first https://a:****@h1/v1 then https://b:****@h2/v1',
    );
  });

  it('leaves the <password> placeholder of a hint as it is', () => {
    const hint = 'write it as postgres://<user>:<password>@<host>:5432/<database>';
    expect(maskPasswords(hint)).toBe(hint);
  });

  it('keeps a masked password as it is, so masking twice changes nothing', () => {
    const once = maskPasswords('https://user:remote-password-1234@remote.example/v1');
    expect(once).toBe('https://user:****1234@remote.example/v1');
    expect(maskPasswords(once)).toBe(once);
  });

  it('leaves a URL without a password as it is', () => {
    for (const text of ['https://llm.example/v1', 'https://bot@llm.example/v1', 'http://:@h/v1', 'no url here']) {
      expect(maskPasswords(text)).toBe(text);
    }
  });
});

describe('maskUrlPassword', () => {
  it('masks a password holding spaces to the last @ of the URL', () => {
    expect(maskUrlPassword('postgres://harness:correct horse battery@db.internal:5432/harness')).toBe(
      'postgres://harness:****tery@db.internal:5432/harness',
    );
    expect(maskUrlPassword('postgres://u:a b@c d@h/db')).toBe('postgres://u:****@h/db');
  });

  it('masks as maskPasswords does otherwise, and keeps a URL without a password', () => {
    for (const url of [
      'postgres://u:Sup3r/S3cretPw@h/db',
      'postgres://app:db-password-9876@db.internal:5432/x',
      'postgres://h/db?password=secret-value',
      'https://bot:****1234@llm.example/v1',
    ])
      expect(maskUrlPassword(url)).toBe(maskPasswords(url));
    for (const url of ['postgresql:///harness?host=/var/run/postgresql', 'postgres://u@h:5432/db', 'not a dsn'])
      expect(maskUrlPassword(url)).toBe(url);
  });
});
