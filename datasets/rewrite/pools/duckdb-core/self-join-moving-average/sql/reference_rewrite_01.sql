SELECT sensor_id,
       seq,
       avg(value) OVER (
           PARTITION BY sensor_id ORDER BY seq RANGE BETWEEN 6 PRECEDING AND CURRENT ROW
       ) AS moving_avg
FROM readings
ORDER BY sensor_id, seq
