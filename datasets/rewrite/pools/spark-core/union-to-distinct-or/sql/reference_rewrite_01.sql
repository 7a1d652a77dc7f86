SELECT DISTINCT m.department, t.priority
FROM tickets t
JOIN teams m ON m.team_id = t.team_id
WHERE t.status = 'open' OR t.status = 'blocked'
