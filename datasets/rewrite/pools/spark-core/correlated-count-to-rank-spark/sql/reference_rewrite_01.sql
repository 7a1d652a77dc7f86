SELECT player_id,
       grp,
       score
FROM (
    SELECT player_id,
           grp,
           score,
           rank() OVER (PARTITION BY grp ORDER BY score DESC) AS score_rank
    FROM scores
) ranked
WHERE score_rank <= 3 OR score IS NULL OR grp IS NULL
