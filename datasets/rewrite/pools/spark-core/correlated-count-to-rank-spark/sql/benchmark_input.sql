-- The top three players of each group, ties included: fewer than three better scores there.
SELECT a.player_id,
       a.grp,
       a.score
FROM scores a
WHERE (SELECT count(*)
       FROM scores b
       WHERE b.grp = a.grp AND b.score > a.score) < 3
