-- The average of each reading and the readings up to 6 steps before it, per sensor.
SELECT a.sensor_id, a.seq, avg(b.value) AS moving_avg
FROM readings AS a
JOIN readings AS b
  ON b.sensor_id = a.sensor_id AND b.seq BETWEEN a.seq - 6 AND a.seq
GROUP BY a.sensor_id, a.seq
ORDER BY a.sensor_id, a.seq
