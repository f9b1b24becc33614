/**
 * The one id alphabet: letters, digits and `_ . : -`. Agent ids, guardian
 * codes, rejection codes and key prefixes are all spelled with it, so an id is
 * safe in a Redis key, a URL path segment and a log line alike.
 */
export const ID_CHARS = "A-Za-z0-9_.:-";

/** 1-128 id characters: agent ids, guardian codes. */
export const ID_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;

/** 1-64 id characters: rejection codes, key prefixes. */
export const SHORT_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;
